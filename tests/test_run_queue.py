"""benchmarks/run_queue.sh, with a stand-in for the interpreter: every queued run is made once,
finished runs are skipped, a run cut off is made again, and two workers share one queue."""

import os
import stat
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "run_queue.sh"

# run_queue.sh first asks `python benchmarks/missing_runs.py SUITE --check-queue QUEUE` whether the
# suite plans every queued run; the stand-ins pass that check (its own test runs the real one). Its
# check of a run's report (`python -c ...`: are its runs all OK?) is handed to the real interpreter.
PASS_QUEUE_CHECK = ('[[ "$1" == */missing_runs.py ]] && exit 0\n'
                    f'[[ "$1" == -c ]] && exec "{sys.executable}" "$@"\n')

# What run_queue.sh reads of a run's report: its runs and their status.
OK_REPORT = '{"entries": [{"runs": [{"seed": 0, "status": "ok"}]}]}'

# Stands in for `python -m textcls.cli benchmark ... --output-dir DIR`: records the call, then
# writes a report into DIR, as the real command does at its end.
FAKE_PYTHON = "#!/usr/bin/env bash\n" + PASS_QUEUE_CHECK + """
while [[ $# -gt 0 ]]; do
  case "$1" in --only) only=$2 ;; --seed) seed=$2 ;; --output-dir) dir=$2 ;; esac; shift
done
echo "$only $seed" >> "$CALLS"
sleep 0.2
mkdir -p "$dir" && echo '""" + OK_REPORT + """' > "$dir/toy--only.json"
"""


def _executable(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` as an executable script (a stand-in for a program)."""
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _worker(tmp_path: Path, queue: Path, root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": str(tmp_path / "python"), "CALLS": str(tmp_path / "calls.txt")}
    return subprocess.run(["bash", str(SCRIPT), "toy", str(queue), str(root)], env=env, capture_output=True,
                          text=True, check=True)


def test_two_workers_make_every_run_once_and_skip_finished_ones(tmp_path):
    _executable(tmp_path / "python", FAKE_PYTHON)
    queue = tmp_path / "queue.txt"
    queue.write_text("# a comment\nsst2:fcsr 0  # resumes after epoch 3\nmr:fcsr 0\n\nfdu_mtl/apparel:fcsr 1\nmr:bilstm 2\n")
    root = tmp_path / "runs"
    (root / "mr_bilstm_s2").mkdir(parents=True)  # a run cut off: a folder without a report
    (root / "mr_bilstm_s2" / "partial.txt").write_text("x")
    outputs = []
    workers = [threading.Thread(target=lambda: outputs.append(_worker(tmp_path, queue, root).stdout)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    calls = sorted((tmp_path / "calls.txt").read_text().split("\n")[:-1])
    assert calls == ["fdu_mtl/apparel:fcsr 1", "mr:bilstm 2", "mr:fcsr 0", "sst2:fcsr 0"]
    assert not (root / "mr_bilstm_s2" / "partial.txt").exists()
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == [
        "fdu_mtl_apparel_fcsr_s1", "mr_bilstm_s2", "mr_fcsr_s0", "sst2_fcsr_s0"]  # no lock left behind
    assert "".join(outputs).count("rc=0") == 4
    again = _worker(tmp_path, queue, root)
    assert again.stdout.count("(done)") == 4 and len((tmp_path / "calls.txt").read_text().splitlines()) == 4


def test_run_args_and_an_existing_pythonpath_reach_every_run(tmp_path):
    """RUN_ARGS="--device cuda" is how a GPU machine's workers run; packages carried there sit on
    a PYTHONPATH that must come after the checkout's src, not be replaced by it."""
    fake = _executable(tmp_path / "python", '#!/usr/bin/env bash\n' + PASS_QUEUE_CHECK + 'echo "$PYTHONPATH|$*" >> "$CALLS"\n'
                       'while [[ $# -gt 0 ]]; do [[ $1 == --output-dir ]] && dir=$2; shift; done\n'
                       f'mkdir -p "$dir" && echo \'{OK_REPORT}\' > "$dir/toy.json"\n')
    queue = tmp_path / "queue.txt"
    queue.write_text("sst2:fcsr 0\n")
    env = {**os.environ, "PYTHON": str(fake), "CALLS": str(tmp_path / "calls.txt"),
           "RUN_ARGS": "--device cuda", "PYTHONPATH": "/carried/site"}
    subprocess.run(["bash", str(SCRIPT), "toy", str(queue), str(tmp_path / "runs")], env=env, check=True,
                   capture_output=True)
    pythonpath, args = (tmp_path / "calls.txt").read_text().strip().split("|")
    assert pythonpath == f"{SCRIPT.parents[1] / 'src'}:/carried/site"
    assert args.split()[-2:] == ["--device", "cuda"] and "--only sst2:fcsr --seed 0" in args


def test_a_failed_run_logs_its_exit_status_and_leaves_no_report(tmp_path):
    """Until stop 30 every run logged rc=0: the log line's $(date) reset $? before it was read."""
    _executable(tmp_path / "python", '#!/usr/bin/env bash\n' + PASS_QUEUE_CHECK +
                'echo "Error: --seed 10 matches no seed" >&2\nexit 2\n')
    queue = tmp_path / "queue.txt"
    queue.write_text("sst2:fcsr 10\n")
    root = tmp_path / "runs"
    out = _worker(tmp_path, queue, root).stdout
    assert "end sst2:fcsr seed 10 rc=2" in out
    assert "matches no seed" in (root / "sst2_fcsr_s10.log").read_text()
    assert not list(root.glob("*/*.json"))


GPU_WORKERS = SCRIPT.parent / "gpu_workers.sh"

# Records its call and environment; a run of the entry "slow:..." outlives the deadline.
GPU_FAKE = "#!/usr/bin/env bash\n" + PASS_QUEUE_CHECK + """
echo "${TEXTCLS_CACHE:-}|$TEXTCLS_DATA_DIR|$PYTHONPATH|$*" >> "$CALLS"
while [[ $# -gt 0 ]]; do case "$1" in --output-dir) dir=$2 ;; --only) only=$2 ;; esac; shift; done
mkdir -p "$dir"
if [[ $only == slow:* ]]; then sleep 20; touch "$dir/still-ran-after-the-deadline"; fi
echo '""" + OK_REPORT + """' > "$dir/toy.json"
"""


def _gpu_workers(tmp_path, queue_text, deadline="6", **env_extra):
    fake = _executable(tmp_path / "python", GPU_FAKE)
    queue = tmp_path / "queue.txt"
    queue.write_text(queue_text)
    env = {**{k: v for k, v in os.environ.items() if k != "TEXTCLS_CACHE"}, "PYTHON": str(fake),
           "CALLS": str(tmp_path / "calls.txt"), "WORKERS": "2", **env_extra}
    return subprocess.run(["bash", str(GPU_WORKERS), "toy", str(queue), str(tmp_path / "runs"), deadline], env=env,
                          capture_output=True, text=True, timeout=60)


def test_gpu_workers_share_one_queue_on_cuda_and_stop_the_run_in_flight_at_the_deadline(tmp_path):
    done = _gpu_workers(tmp_path, "slow:fcsr 0\nsst2:fcsr 0\nmr:fcsr 0\ntrec:fcsr 0\n")
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert len(calls) == 4 and all(call.endswith("--device cuda") for call in calls)
    assert done.returncode != 0 and "unfinished: slow:fcsr 0" in done.stdout and "1 run(s)" in done.stdout
    runs = tmp_path / "runs"
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == ["mr_fcsr_s0", "slow_fcsr_s0", "sst2_fcsr_s0",
                                                                     "trec_fcsr_s0"]
    time.sleep(20)  # long enough for the slow run to finish, had the deadline not stopped it
    assert not list((runs / "slow_fcsr_s0").iterdir())


def test_gpu_workers_read_a_bundle_and_refuse_a_folder_that_is_not_one(tmp_path):
    refused = _gpu_workers(tmp_path, "sst2:fcsr 0\n", BUNDLE=str(tmp_path / "nothing"))
    assert refused.returncode == 2 and "not a folder written by benchmarks/offline_bundle.py" in refused.stderr
    bundle = tmp_path / "bundle"
    (bundle / "site").mkdir(parents=True)
    (bundle / "datasets").mkdir()
    done = _gpu_workers(tmp_path, "sst2:fcsr 0\n", BUNDLE=str(bundle))
    assert done.returncode == 0 and "0 run(s)" in done.stdout
    cache, data_dir, pythonpath, _ = (tmp_path / "calls.txt").read_text().strip().split("|")
    assert data_dir == str(bundle / "datasets") and f"{bundle / 'site'}" in pythonpath.split(":") and cache == ""


def test_gpu_workers_unpack_a_packed_bundle_under_the_root_and_read_its_datasets_and_vectors_there(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "site").mkdir(parents=True)
    for name, member in (("datasets", "trec/train_5500.label"), ("cache", "minilm-static-pca256/distill.json")):
        source = tmp_path / f"{name}-source"
        (source / member).parent.mkdir(parents=True)
        (source / member).write_text("packed")
        with tarfile.open(bundle / f"{name}.tar.xz", "w:xz") as archive:
            archive.add(source, arcname=".")
    done = _gpu_workers(tmp_path, "sst2:fcsr 0\n", BUNDLE=str(bundle))
    assert done.returncode == 0, done.stderr
    cache, data_dir, _, _ = (tmp_path / "calls.txt").read_text().strip().split("|")
    unpacked = tmp_path / "runs.bundle"  # beside the root: `--merge-from ROOT` reads every JSON under it
    assert not [p for p in (tmp_path / "runs").rglob("*") if p.suffix == ".json" and p.parent.name != "sst2_fcsr_s0"]
    assert data_dir == str(unpacked / "datasets") and cache == str(unpacked / "cache")
    assert (unpacked / "datasets" / "trec" / "train_5500.label").read_text() == "packed"
    assert (unpacked / "cache" / "minilm-static-pca256" / "distill.json").read_text() == "packed"


def test_a_run_another_worker_finishes_during_the_check_is_neither_wiped_nor_made_again(tmp_path):
    """The race two workers hit: worker B finds no report, worker A then writes its report and
    removes its lock, and B takes the lock. B must check again under the lock, and leave A's
    report alone. A stand-in `mkdir` plays A: it writes the report just before B's lock is made."""
    a_report = '{"by": "A", ' + OK_REPORT[1:]
    fake = _executable(tmp_path / "python", FAKE_PYTHON)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "mkdir", '#!/usr/bin/env bash\nfor a in "$@"; do case "$a" in *.lock) run=${a%.lock}; '
                f'/bin/mkdir -p "$run"; echo \'{a_report}\' > "$run/toy--only.json";; esac; done\n'
                'exec /bin/mkdir "$@"\n')
    queue = tmp_path / "queue.txt"
    queue.write_text("mr:fcsr 0\n")
    root = tmp_path / "runs"
    env = {**os.environ, "PYTHON": str(fake), "CALLS": str(tmp_path / "calls.txt"),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), "toy", str(queue), str(root)], env=env, capture_output=True,
                          text=True, check=True)
    assert "skip mr:fcsr seed 0 (done)" in done.stdout
    assert not (tmp_path / "calls.txt").exists()  # not made again
    assert (root / "mr_fcsr_s0" / "toy--only.json").read_text().strip() == a_report
    assert not (root / "mr_fcsr_s0.lock").exists()


def test_a_malformed_queue_line_or_a_missing_queue_stops_before_any_run(tmp_path):
    _executable(tmp_path / "python", FAKE_PYTHON)
    env = {**os.environ, "PYTHON": str(tmp_path / "python"), "CALLS": str(tmp_path / "calls.txt")}
    queue = tmp_path / "queue.txt"
    queue.write_text("sst2:fcsr 0\n# a comment\nsst2:fcsr x\n")
    done = subprocess.run(["bash", str(SCRIPT), "toy", str(queue), str(tmp_path / "runs")], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2 and f"{queue}:3: 'sst2:fcsr x" in done.stderr
    assert not (tmp_path / "calls.txt").exists()  # not even line 1 ran
    done = subprocess.run(["bash", str(SCRIPT), "toy", str(tmp_path / "nosuch.txt"), str(tmp_path / "runs")], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "nosuch.txt: no such queue file" in done.stderr
    assert not (tmp_path / "runs").exists()


def _real_queue_check(tmp_path) -> dict:
    """A stand-in interpreter that hands missing_runs.py to the real one and records the runs; a toy
    suite "toy.toml" (mr:tfidf-lr, seeds 0 and 1); the environment to run run_queue.sh with."""
    _executable(tmp_path / "python", '#!/usr/bin/env bash\n'
                f'[[ "$1" == */missing_runs.py ]] && exec "{sys.executable}" "$@"\n'
                'echo "$*" >> "$CALLS"\n')
    (tmp_path / "toy.toml").write_text('[suite]\nname = "toy"\n[[entry]]\ndataset = "mr"\nmodel = "tfidf-lr"\n'
                                       'seeds = [0, 1]\n')
    return {**os.environ, "PYTHON": str(tmp_path / "python"), "CALLS": str(tmp_path / "calls.txt")}


def test_a_queue_naming_an_entry_or_seed_the_suite_lacks_stops_before_any_run(tmp_path):
    """The real check (missing_runs.py --check-queue) with the real interpreter; the runs stand in.
    Until stop 63 such a line started a run that failed hours into the queue (an unknown entry)
    or finished and was then refused by --merge-from (a seed the suite does not plan)."""
    env = _real_queue_check(tmp_path)
    suite = tmp_path / "toy.toml"
    queue = tmp_path / "queue.txt"
    for text, message in (("mr:tfidf-lr 1\nmr:tfidf-lr-typo 0\n", ":2: the suite has no entry 'mr:tfidf-lr-typo'"),
                          ("mr:tfidf-lr 0  # resumes after epoch 2\nmr:tfidf-lr 7\n",
                           ":2: entry 'mr:tfidf-lr' plans seeds [0, 1], not 7")):
        queue.write_text(text)
        done = subprocess.run(["bash", str(SCRIPT), str(suite), str(queue), str(tmp_path / "runs")], env=env,
                              capture_output=True, text=True)
        assert done.returncode == 2 and f"{queue}{message}" in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "calls.txt").exists() and not (tmp_path / "runs").exists()
    queue.write_text("mr:tfidf-lr 1\n")
    subprocess.run(["bash", str(SCRIPT), str(suite), str(queue), str(tmp_path / "runs")], env=env, check=True,
                   capture_output=True)
    assert "--only mr:tfidf-lr --seed 1" in (tmp_path / "calls.txt").read_text()


def test_a_run_whose_report_holds_a_failed_run_is_moved_aside_and_made_again(tmp_path):
    """A child killed by the OOM killer still leaves a report, its run "failed". Any report once
    counted as done: the run was skipped for good and --pending said nothing was left."""
    _executable(tmp_path / "python", FAKE_PYTHON)
    queue = tmp_path / "queue.txt"
    queue.write_text("sst2:fcsr 0\ntrec:fcsr 0\nmr:fcsr 0\n")
    root = tmp_path / "runs"
    failed = '{"entries": [{"runs": [{"seed": 0, "status": "failed", "error": "child died (out of memory?)"}]}]}'
    for folder, report in (("sst2_fcsr_s0", failed), ("trec_fcsr_s0", '{"entries": [{"runs": [')):
        (root / folder).mkdir(parents=True)
        (root / folder / "toy--only.json").write_text(report)
        (root / f"{folder}.log").write_text(f"the log of {folder}")
    (root / "mr_fcsr_s0").mkdir()
    (root / "mr_fcsr_s0" / "toy--only.json").write_text(OK_REPORT)
    env = {**os.environ, "PYTHON": str(tmp_path / "python"), "CALLS": str(tmp_path / "calls.txt")}
    pending = subprocess.run(["bash", str(SCRIPT), "--pending", "toy", str(queue), str(root)], env=env,
                             capture_output=True, text=True)
    assert pending.returncode == 1 and "2 run(s)" in pending.stdout, pending.stdout
    assert "unfinished: sst2:fcsr 0 (its report holds a failed run: child died (out of memory?))" in pending.stdout
    assert "unfinished: trec:fcsr 0 (its report" in pending.stdout and "cannot be read" in pending.stdout
    done = _worker(tmp_path, queue, root).stdout
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["sst2:fcsr 0", "trec:fcsr 0"]
    assert "skip mr:fcsr seed 0 (done)" in done
    assert f"redo sst2:fcsr seed 0: its report holds a failed run: child died (out of memory?); moved it to " \
           f"{root}/sst2_fcsr_s0.failed-" in done
    for folder, report in (("sst2_fcsr_s0", failed), ("trec_fcsr_s0", '{"entries": [{"runs": [')):
        aside, = root.glob(f"{folder}.failed-*[0-9]Z")  # its report and log kept
        assert (aside / "toy--only.json").read_text() == report
        assert Path(f"{aside}.log").read_text() == f"the log of {folder}"
        assert (root / folder / "toy--only.json").read_text().strip() == OK_REPORT
    pending = subprocess.run(["bash", str(SCRIPT), "--pending", "toy", str(queue), str(root)], env=env,
                             capture_output=True, text=True)
    assert pending.returncode == 0 and "0 run(s)" in pending.stdout


def test_a_crlf_queue_is_refused_alike_by_the_queue_check_and_the_queue(tmp_path):
    """missing_runs.py --check-queue once passed a CRLF queue, which run_queue.sh then
    refused as "'mr:tfidf-lr 1 ' is not 'ENTRY_ID SEED'": a line that looks right on screen."""
    env = _real_queue_check(tmp_path)
    queue = tmp_path / "queue.txt"
    queue.write_bytes(b"mr:tfidf-lr 0\nmr:tfidf-lr 1\r\n")
    message = f"error: {queue}: line 2 ends in a carriage return (CRLF); convert the file with dos2unix {queue}\n"
    for command in (["bash", str(SCRIPT), str(tmp_path / "toy.toml"), str(queue), str(tmp_path / "runs")],
                    [sys.executable, str(SCRIPT.parent / "missing_runs.py"), str(tmp_path / "toy.toml"),
                     "--check-queue", str(queue)]):
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr == message, done.stderr
    assert not (tmp_path / "calls.txt").exists()


def test_a_last_line_without_a_newline_is_checked_made_and_listed_as_pending(tmp_path):
    """An editor or `printf` can leave the last queue line without its newline; `read` then fails on
    it, and the queue used to skip that run silently (made by no worker, listed by no --pending)."""
    _executable(tmp_path / "python", FAKE_PYTHON)
    env = {**os.environ, "PYTHON": str(tmp_path / "python"), "CALLS": str(tmp_path / "calls.txt")}
    queue, root = tmp_path / "queue.txt", tmp_path / "runs"
    queue.write_text("sst2:fcsr 0\nmr:fcsr 1")
    pending = subprocess.run(["bash", str(SCRIPT), "--pending", "toy", str(queue), str(root)], env=env,
                             capture_output=True, text=True)
    assert pending.returncode == 1 and "unfinished: mr:fcsr 1" in pending.stdout
    _worker(tmp_path, queue, root)
    assert sorted((tmp_path / "calls.txt").read_text().splitlines()) == ["mr:fcsr 1", "sst2:fcsr 0"]
    queue.write_text("sst2:fcsr 0\nmr:fcsr x")
    bad = subprocess.run(["bash", str(SCRIPT), "toy", str(queue), str(root)], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and f"{queue}:2: 'mr:fcsr x" in bad.stderr
