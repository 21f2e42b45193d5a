// lines_cxx.cc: a C++ call site for the demangled names of sampled frames
// (test_memsup_lines.c, which builds it with g++ -g when g++ is there).
//
// Usage: lines_cxx [HOLD_MS]          (default 100)
//
// Holds one 5 MB block from operator new called in a member function of a
// class template in a namespace, called from a static function (fill: in
// no dynamic symbol table, even with -rdynamic), prints the truth on stdout,
//   site=store::Pool<int>::grow(unsigned long) line=L bytes=B
// with L the line of the new expression (__LINE__ on the same line), holds
// for HOLD_MS milliseconds, frees it and exits 0.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <malloc.h>

namespace store {
template <typename T> struct Pool {
	T *block = nullptr;
	int line = 0;
	__attribute__((noinline)) void grow(unsigned long n)
	{
		block = new T[n]; line = __LINE__;
	}
};
} // namespace store

static __attribute__((noinline)) void fill(store::Pool<int> &pool)
{
	pool.grow(5000000 / sizeof(int));
	__asm__ volatile(""); // not a tail call: fill keeps its frame
}

int main(int argc, char **argv)
{
	long hold_ms = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 100;
	store::Pool<int> pool;
	fill(pool);
	std::printf("site=store::Pool<int>::grow(unsigned long) line=%d bytes=%zu\n", pool.line,
		    malloc_usable_size(pool.block));
	std::fflush(stdout);
	struct timespec ts = { hold_ms / 1000, hold_ms % 1000 * 1000000 };
	nanosleep(&ts, nullptr);
	delete[] pool.block;
	return 0;
}
