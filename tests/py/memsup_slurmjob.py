"""memsup_slurmjob.py: the checks of tests/e2e/test_memsup_slurmjob.c.

    python3 tests/py/memsup_slurmjob.py CHECK EVIDENCE_DIR

CHECK names one of the functions below (the test's own name).  The record
is read with the json module (a real parser, not memsup's).  The truth:
steady N maps N MB rounded up to 2 MiB, plus 2 MiB, and touches the
rounded part; the tree is a shell, a sleep and the steadies.  Standard
library only.
"""
import json, os, sys

CHECK = sys.argv.pop(1)
d = sys.argv[1]
rec = json.load(open(os.path.join(d, 'resources.json')))
slurm = rec['slurm']
MIB2 = 2 * 1048576 / 1e6
TEN, SIXTY = 5 * MIB2, 29 * MIB2    # what steady 10 and steady 60 touch


def finding():
    f = [b for b in rec['blind_spots'] if b['kind'] == 'slurm_maxrss']
    assert len(f) <= 1, f
    return f[0] if f else None


def job_is_ours():
    assert slurm['job_id'] == '4242' and slurm['step_id'] == '0', slurm
    assert slurm['config'].endswith('/slurm.conf'), slurm


def spike_between_polls_is_explained():
    job_is_ours()
    assert slurm['jobacct_gather'] == 'linux' and slurm['poll_s'] == 1, slurm
    assert slurm['poll_reads'] == 'summed_rss' and slurm['memsup_anon_mb'] is None, slurm
    assert slurm['poll_from'] == 'slurm.conf' and slurm['config_error'] is None, slurm
    lo, hi = slurm['poll_low_mb'], slurm['poll_high_mb']
    # the unluckiest schedule reads steady 10 and the programs, never the spike
    assert TEN <= lo < TEN + 15, f'low {lo} MB: steady 10 touches {TEN:.1f}'
    # the luckiest reads the spike on top of it
    assert hi >= TEN + SIXTY, f'high {hi} MB: both touch {TEN + SIXTY:.1f}'
    f = finding()
    assert f, rec['blind_spots']
    assert f['slurm_maxrss_low_mb'] == round(lo, 2) and f['slurm_maxrss_high_mb'] == round(hi, 2), f
    assert f['tree_peak_mb'] == round(rec['peak_mb'], 2), (f, rec['peak_mb'])
    assert abs(f['between_polls_mb'] - (hi - lo)) < 0.02, f
    assert f['between_polls_mb'] >= SIXTY - 5, f
    s = f['sentence']
    assert s.startswith('Slurm job 4242 step 0 (jobacct_gather/linux, a poll every 1 s'), s
    assert 'the most summed RSS of its processes that one poll read' in s, s
    assert f"between {lo:.1f} and {hi:.1f} MB" in s and 'came and went between two' in s, s
    print(s)


def no_accounting_is_said():
    job_is_ours()
    assert slurm['jobacct_gather'] == 'none', slurm
    assert slurm['poll_low_mb'] is None and slurm['poll_high_mb'] is None, slurm
    f = finding()
    assert f and 'keeps no memory figure' in f['sentence'], rec['blind_spots']


def unreadable_configuration_is_said():
    job_is_ours()
    assert slurm['config_error'] == 'No such file or directory', slurm
    assert slurm['jobacct_gather'] is None, slurm
    assert slurm['poll_s'] == 30 and slurm['poll_from'] == 'default', slurm
    # a poll every 30 s of a run of 0.3 s: the unlucky ones read 0
    assert slurm['poll_low_mb'] == 0 and slurm['poll_high_mb'] > 0, slurm


def acctg_freq_overrides_the_configuration():
    job_is_ours()
    assert slurm['poll_s'] == 7 and slurm['poll_from'] == 'SLURM_ACCTG_FREQ', slurm
    assert slurm['jobacct_gather'] == 'linux', slurm


def periodic_poll_off_is_said():
    job_is_ours()
    assert slurm['poll_s'] == 0 and slurm['poll_from'] == 'SLURM_ACCTG_FREQ', slurm
    assert slurm['poll_low_mb'] is None and slurm['poll_reads'] is None, slurm
    f = finding()
    assert f and f['slurm_poll_s'] == 0 and 'periodic poll off (task=0' in f['sentence'], rec['blind_spots']


globals()[CHECK]()
