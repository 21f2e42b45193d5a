#!/bin/sh
# realprogs_threads.sh: real programs that run several threads at once
# (xz -T2, zstd -T2, pigz -p 2, sort --parallel=4, git gc and index-pack,
# python3 concurrent.futures with 16 threads and 4 processes, gcc -flto=2),
# bare and under libmemtrace.so, compared byte for byte with their exit
# statuses, in rounds: realprogs_loop.sh with the threaded cases.
#   REALPROGS_ROUNDS   rounds (realprogs_loop.sh's default: 1, or 3 in CI's
#                      thorough check)
REALPROGS_CASES="xz zstd pigz sort4 gitgc pyfutures gcclto"
export REALPROGS_CASES
exec "$(dirname "$0")/realprogs_loop.sh"
