"""The controlled speed tool (`textcls speed`): batch shapes, one real timing, bad input."""

import json
import os

import pytest
import torch

from textcls.benchmark.speed import interleaved_best, parse_overrides, run_speed, synthetic_batch, write_speed_report
from textcls.cli import main
from textcls.errors import ConfigError
from textcls.models.registry import get_preset


def test_synthetic_batches_follow_the_preset_input_shape():
    gen = torch.Generator().manual_seed(0)
    flat = synthetic_batch(get_preset("kim-cnn-static"), 3, 10, 50, 4, 25, gen)
    assert flat["input_ids"].shape == (3, 10) and bool(flat["mask"].all())
    assert int(flat["input_ids"].min()) >= 2 and int(flat["labels"].max()) < 4
    bag = synthetic_batch(get_preset("fasttext-bag"), 3, 10, 50, 4, 25, gen)
    assert bag["bigram_ids"].shape == (3, 9) and int(bag["bigram_ids"].min()) >= 1
    hier = get_preset("kim-cnn-static").with_overrides(shape="hierarchical", max_sentences=8, max_sentence_length=4)
    h = synthetic_batch(hier, 2, 10, 50, 4, 4, gen)
    assert h["input_ids"].shape == (2, 3, 4) and h["sentence_mask"].shape == (2, 3)


def test_run_speed_times_each_model_in_its_own_process_and_writes_the_report(tmp_path):
    result = run_speed(["kim-cnn-static", "fasttext-bag"], [16], batch_size=4, steps=1, warmup=1, threads=1,
                       vocab_size=100, overrides={"kim-cnn-static": {"feature_maps": 8}}, progress=False)
    rows = {r["model"]: r for r in result["rows"]}
    assert [r["status"] for r in result["rows"]] == ["ok", "ok"]
    # 3 windows x 8 maps x 50-d + biases + a 24 -> 4 softmax layer + the 100 x 50 table.
    assert rows["kim-cnn-static"]["parameters"] == 8 * 50 * (3 + 4 + 5) + 3 * 8 + 24 * 4 + 4 + 100 * 50
    assert rows["kim-cnn-static"]["trainable_parameters"] == rows["kim-cnn-static"]["parameters"] - 100 * 50
    assert rows["kim-cnn-static"]["train_docs_per_second"] == pytest.approx(
        4000 / rows["kim-cnn-static"]["train_ms_per_batch"])
    files = write_speed_report(result, tmp_path / "speed", "textcls speed ...")
    assert json.loads(files["json"].read_text())["command"] == "textcls speed ..."
    assert "| fasttext-bag |" in files["markdown"].read_text() and "plot" not in files
    # A folder that exists is written into (-o out wrote out.json and out.md beside the folder).
    (tmp_path / "out").mkdir()
    files = write_speed_report(result, tmp_path / "out")
    assert files == {"json": tmp_path / "out" / "speed.json", "markdown": tmp_path / "out" / "speed.md"}
    assert all(p.is_file() for p in files.values()) and not (tmp_path / "out.json").exists()


def test_an_output_with_a_trailing_slash_is_a_folder_to_make(tmp_path, capsys):
    # Path("out/") is Path("out"): the report was written as out.json and out.md beside no folder.
    main(["speed", "-m", "fasttext-bag", "-l", "16", "-b", "4", "--steps", "1", "--warmup", "1", "--threads", "1",
          "--vocab-size", "100", "-o", str(tmp_path / "out") + os.sep])
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {tmp_path / 'out' / 'speed.json'}, " \
                                                      f"{tmp_path / 'out' / 'speed.md'}"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["speed.json", "speed.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_bad_speed_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert parse_overrides(["hcan:d=64", "hcan:mode=\"x\"", "kim-cnn-static:windows=[3]"]) == {
        "hcan": {"d": 64, "mode": "x"}, "kim-cnn-static": {"windows": [3]}}
    with pytest.raises(ConfigError, match="MODEL:KEY=VALUE"):
        parse_overrides(["d=64"])
    with pytest.raises(ConfigError, match="not among the models"):
        run_speed(["kim-cnn-static"], [8], overrides={"fasttext-bag": {"dim": 2}}, progress=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["speed", "-m", "no-such-model", "-o", str(tmp_path / "x")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "no-such-model" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option, value, shown", [
    ("--timeout", "nan", "parameter 'timeout' (--timeout) = nan is outside its allowed range (0, "),
    ("--timeout", "inf", "parameter 'timeout' (--timeout) = inf is outside its allowed range (0, "),
    ("--timeout", "0", "parameter 'timeout' (--timeout) = 0.0 is outside its allowed range (0, "),
    ("--timeout", "-5", "parameter 'timeout' (--timeout) = -5.0 is outside its allowed range (0, "),
    ("--warmup", "-1", "parameter 'warmup' (--warmup) = -1 is outside its allowed range [0, "),
    # It said "parameter 'length'", a name neither the option (--length) nor run_speed (lengths) has.
    ("--length", "100000000", "parameter 'lengths' (--length) = 100000000 is outside its allowed range [1, "),
    ("-l", "0", "parameter 'lengths' (--length) = 0 is outside its allowed range [1, "),
    ("-b", "0", "parameter 'batch_size' (--batch-size) = 0 is outside its allowed range [1, "),  # a short option too
    # It was ignored: no timed preset reads sentences.
    ("--sentence-length", "10", "parameter 'sentence_length' (--sentence-length) = 10: none of the timed presets "
                                "(fasttext-bag) reads sentences, so it would change nothing; leave it out"),
])
def test_speed_settings_that_cannot_be_timed_are_refused_before_any_child(tmp_path, capsys, option, value, shown):
    # Was: nan/inf a ValueError traceback from the child's poll; 0 and warmup -1 (steps 1) every
    # measurement failed with a report written; warmup -1 with steps 3 timed 2 steps, exit 0.
    with pytest.raises(SystemExit) as exit_info:
        main(["speed", "-m", "fasttext-bag", "-l", "8", "-b", "2", "--steps", "3", option, value,
              "-o", str(tmp_path / "sp")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: " + shown) and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_run_speed_checks_every_setting_of_the_python_api():
    for bad, match in (({"threads": 0}, "'threads' = 0"), ({"warmup": 1.5}, "'warmup' = 1.5"),
                       ({"timeout": float("nan")}, "'timeout' = nan"), ({"steps": 0}, "'steps' = 0")):
        with pytest.raises(ConfigError, match=match):
            run_speed(["fasttext-bag"], [8], progress=False, **bad)
    # With a hierarchical preset among the timed ones, sentence_length is read, so checked, not refused.
    with pytest.raises(ConfigError, match=r"^parameter 'sentence_length' = 0 is outside its allowed range"):
        run_speed(["fasttext-bag", "han-cpu"], [8], sentence_length=0, progress=False)


def test_interleaved_best_takes_turns_and_keeps_each_ones_fastest_round():
    calls = []

    def make(kind):
        def predict(texts):
            calls.append(kind)
            return [kind] * len(texts)
        return predict

    best, outputs = interleaved_best(3, {"fp32": make("fp32"), "int8": make("int8")}, ["a", "b"])
    assert calls == ["fp32", "int8"] * 3  # turns within every round, not all of one first
    assert outputs == {"fp32": ["fp32", "fp32"], "int8": ["int8", "int8"]}
    assert set(best) == {"fp32", "int8"} and all(0 <= t < float("inf") for t in best.values())


@pytest.mark.parametrize("args, flag, mode", [
    (("-m", "fasttext-bag", "--docs", "5"), "--docs", "only with --predict"),
    (("-m", "fasttext-bag", "-d", "mr"), "--data", "only with --predict"),
    (("-m", "fasttext-bag", "--epochs", "1"), "--epochs", "only with --predict"),  # its default, still given
    (("--predict", "-l", "64"), "--length", "only without --predict"),
    (("--predict", "--set", "hcan:d=64"), "--set", "only without --predict"),
])
def test_an_option_of_the_other_mode_is_refused_not_ignored(tmp_path, capsys, monkeypatch, args, flag, mode):
    # --docs without --predict was ignored without a word, and the training batches were timed.
    def never(*args, **kwargs):
        raise AssertionError("timed despite an option that does not apply")

    monkeypatch.setattr("textcls.benchmark.speed.run_speed", never)
    monkeypatch.setattr("textcls.benchmark.predict_speed.run_predict_speed", never)
    with pytest.raises(SystemExit) as exit_info:
        main(["speed", *args, "-o", str(tmp_path / "sp")])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1 and not list(tmp_path.iterdir())
    assert err.startswith(f"error: {flag} applies {mode} (") and "--predict" in err.split(";")[1]


def test_the_table_names_its_time_ratio_and_its_memory_ratio_apart():
    # Both ratio columns were headed "x first"; the second is the ratio of added memory.
    from textcls.benchmark.speed import format_speed_markdown

    def row(model, ms, added):
        return {"model": model, "length": 16, "status": "ok", "train_ms_per_batch": ms, "train_docs_per_second": 1.0,
                "infer_ms_per_batch": 1.0, "peak_rss_mb": 100.0, "training_peak_added_mb": added,
                "trainable_parameters": 10, "parameters": 10}

    result = {"settings": {"models": ["a", "b"], "batch_size": 4, "steps": 1, "warmup": 1, "threads": 1,
                           "vocab_size": 100, "num_classes": 2, "lengths": [16]},
              "machine": {}, "git": {}, "rows": [row("a", 10.0, 20.0), row("b", 30.0, 80.0)]}
    lines = format_speed_markdown(result).splitlines()
    header = next(line for line in lines if line.startswith("| model |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert len(cells) == len(set(cells)), cells
    b = [c.strip() for c in next(line for line in lines if line.startswith("| b |")).strip("|").split("|")]
    assert b[cells.index("train x first")] == "3.00" and b[cells.index("added MB x first")] == "4.00"


def test_every_committed_speed_table_is_its_json_rendered():
    """A change to the speed tables is followed by re-rendering the committed ones: 22896d9 renamed
    the two 'x first' columns and the committed tables kept the old headers."""
    from pathlib import Path

    from textcls.benchmark.speed import format_speed_markdown

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    tables = sorted(results.glob("speed*.md"))
    for table in tables:
        result = json.loads(table.with_suffix(".json").read_text(encoding="utf-8"))
        assert format_speed_markdown(result, result.get("command")) == table.read_text(encoding="utf-8"), (
            f"{table} is not its JSON rendered: rewrite it with textcls.benchmark.speed.format_speed_markdown("
            f"json.load(open('{table.with_suffix('.json').name}')), its 'command')")
    assert len(tables) >= 7


# --------------------------------------------------------------------------- rounds (--repeats)


def _fake_row(job: dict, ms: float) -> dict:
    """What a child returns, without a child: the fields merge_rounds and the report read."""
    return {"model": job["model"], "length": job["length"], "batch_size": job["batch_size"], "status": "ok",
            "train_ms_per_batch": ms, "train_ms_per_batch_all": [ms - 1.0, ms, ms + 1.0],
            "train_docs_per_second": 1000 * job["batch_size"] / ms, "infer_ms_per_batch": ms / 2,
            "infer_ms_per_batch_all": [ms / 2] * 3, "peak_rss_mb": 100.0 + ms, "rss_before_first_step_mb": 90.0,
            "training_peak_added_mb": 10.0 + ms, "parameters": 10, "trainable_parameters": 10}


def test_repeats_time_every_cell_in_a_fresh_child_each_round(tmp_path, capsys, monkeypatch):
    # The steps of one child were the only replicates: a verdict over them tested one process's
    # jitter. Each round now spawns every cell again, and each row keeps one median per round.
    import statistics

    import textcls.benchmark.speed as speed

    children = []
    real = speed._run_child

    def counted(job, timeout):
        children.append((job["model"], job["length"]))
        return real(job, timeout)

    monkeypatch.setattr(speed, "_run_child", counted)
    main(["speed", "-m", "fasttext-bag", "-l", "8", "-l", "16", "-b", "2", "--steps", "2", "--warmup", "0",
          "--threads", "1", "--vocab-size", "100", "--repeats", "2", "-o", str(tmp_path / "sp")])
    assert sorted(children) == sorted([("fasttext-bag", 8), ("fasttext-bag", 16)] * 2)  # 2 children per cell
    result = json.loads((tmp_path / "sp.json").read_text())
    assert result["settings"]["repeats"] == 2
    assert [r["length"] for r in result["rows"]] == [8, 16]  # one row per cell
    for row in result["rows"]:
        assert row["status"] == "ok" and len(row["train_ms_per_batch_rounds"]) == 2
        steps = row["train_ms_per_batch_all"]  # both rounds' steps, round after round
        assert len(steps) == 4 and row["train_ms_per_batch"] == statistics.median(steps)
        assert row["train_ms_per_batch_rounds"] == [statistics.median(steps[:2]), statistics.median(steps[2:])]
    err = capsys.readouterr().err
    assert [line.split(":")[0] for line in err.splitlines() if line.startswith("[speed]")] == [
        "[speed] round 1/2 fasttext-bag L=8", "[speed] round 1/2 fasttext-bag L=16",
        "[speed] round 2/2 fasttext-bag L=16", "[speed] round 2/2 fasttext-bag L=8"]  # progress as it goes
    table = (tmp_path / "sp.md").read_text()
    assert "2 rounds, each timing every (model, length) in a fresh process" in table
    assert "| rounds: ms min-max |" in table and "| rounds: x first min-max |" in table


def test_rounds_rotate_the_models_and_alternate_the_lengths(monkeypatch):
    # A drift over a long timing would fall on the same model in every round in one fixed order.
    import textcls.benchmark.speed as speed

    order = []

    def fake(job, timeout):
        order.append((job["length"], job["model"]))
        return _fake_row(job, 10.0 * (len(order)))

    monkeypatch.setattr(speed, "_run_child", fake)
    models = ["fasttext-bag", "kim-cnn-static", "spe-cnn"]
    result = speed.run_speed(models, [8, 16], repeats=3, steps=3, progress=False)
    a, b, c = models
    assert order == [(8, a), (8, b), (8, c), (16, a), (16, b), (16, c),       # round 1
                     (16, b), (16, c), (16, a), (8, b), (8, c), (8, a),       # round 2: rotated, lengths reversed
                     (8, c), (8, a), (8, b), (16, c), (16, a), (16, b)]       # round 3
    for length in (8, 16):  # each model took every place at each length once
        places = [[m for (ln, m) in order[r * 6:(r + 1) * 6] if ln == length] for r in range(3)]
        assert all(sorted(p.index(m) for p in places) == [0, 1, 2] for m in models)
    # The rows come in the report's order whatever the timing order, each round's median in round order.
    assert [(r["length"], r["model"]) for r in result["rows"]] == [(8, a), (8, b), (8, c), (16, a), (16, b), (16, c)]
    row = next(r for r in result["rows"] if (r["length"], r["model"]) == (16, a))
    times = [10.0 * (i + 1) for i, cell in enumerate(order) if cell == (16, a)]
    assert row["train_ms_per_batch_rounds"] == times
    assert row["train_ms_per_batch_all"] == [x for t in times for x in (t - 1.0, t, t + 1.0)]
    # memory: the round with the highest peak, peak and added of one process
    assert row["peak_rss_mb"] == 100.0 + max(times) and row["training_peak_added_mb"] == 10.0 + max(times)
    assert speed.round_order(2, 1, 0) == [(0, 0), (0, 1)] and speed.round_order(2, 1, 1) == [(0, 1), (0, 0)]


def test_a_cell_that_fails_in_a_round_fails_its_row_and_is_not_timed_again(monkeypatch):
    import textcls.benchmark.speed as speed

    calls = []

    def fake(job, timeout):
        calls.append(job["model"])
        if job["model"] == "spe-cnn" and calls.count("spe-cnn") == 2:
            return {"model": job["model"], "length": job["length"], "status": "failed", "error": "out of memory"}
        return _fake_row(job, 10.0)

    monkeypatch.setattr(speed, "_run_child", fake)
    result = speed.run_speed(["fasttext-bag", "spe-cnn"], [8], repeats=4, progress=False)
    assert calls.count("spe-cnn") == 2 and calls.count("fasttext-bag") == 4
    failed = result["rows"][1]
    assert failed["status"] == "failed" and failed["error"] == "round 2: out of memory"
    assert len(result["rows"][0]["train_ms_per_batch_rounds"]) == 4


@pytest.mark.parametrize("value, shown", [
    ("0", "error: parameter 'repeats' (--repeats) = 0 is outside its allowed range [1, "),
    ("-1", "error: parameter 'repeats' (--repeats) = -1 is outside its allowed range [1, "),
    ("1.5", "error: Invalid value for '--repeats': "),  # click's type check, with its own wording
    ("two", "error: Invalid value for '--repeats': "),
])
def test_repeats_that_are_not_a_whole_number_of_rounds_are_refused(tmp_path, capsys, monkeypatch, value, shown):
    def never(*args, **kwargs):
        raise AssertionError("a child was started")

    monkeypatch.setattr("textcls.benchmark.speed._run_child", never)
    with pytest.raises(SystemExit) as exit_info:
        main(["speed", "-m", "fasttext-bag", "-l", "8", "-b", "2", "--repeats", value, "-o", str(tmp_path / "sp")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(shown) and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())
    with pytest.raises(SystemExit) as exit_info:  # it times training batches: --predict does not read it
        main(["speed", "--predict", "--repeats", "2", "-o", str(tmp_path / "sp")])
    assert exit_info.value.code == 2 and capsys.readouterr().err.startswith("error: --repeats applies only without")


def test_run_speed_refuses_repeats_below_one_or_fractional():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match=r"^parameter 'repeats' = "):
            run_speed(["fasttext-bag"], [8], repeats=bad, progress=False)


def test_a_table_of_rounds_shows_their_spread_and_of_one_round_is_as_before():
    from textcls.benchmark.speed import format_speed_markdown

    def row(model, ms, rounds):
        return {"model": model, "length": 16, "status": "ok", "train_ms_per_batch": ms, "train_docs_per_second": 1.0,
                "infer_ms_per_batch": 1.0, "peak_rss_mb": 100.0, "training_peak_added_mb": 20.0,
                "trainable_parameters": 10, "parameters": 10, "train_ms_per_batch_rounds": rounds}

    settings = {"models": ["a", "b"], "batch_size": 4, "steps": 5, "warmup": 1, "threads": 1, "vocab_size": 100,
                "num_classes": 2, "lengths": [16], "repeats": 3}
    result = {"settings": settings, "machine": {}, "git": {},
              "rows": [row("a", 10.0, [9.0, 10.0, 12.0]), row("b", 30.0, [27.0, 30.0, 36.0])]}
    lines = format_speed_markdown(result).splitlines()
    assert "median of all 15 timed steps" in "\n".join(lines)
    cells = [c.strip() for c in next(line for line in lines if line.startswith("| model |")).strip("|").split("|")]
    b = [c.strip() for c in next(line for line in lines if line.startswith("| b |")).strip("|").split("|")]
    assert b[cells.index("train ms/batch")] == "30.0" and b[cells.index("rounds: ms min-max")] == "27.0-36.0"
    assert b[cells.index("train x first")] == "3.00" and b[cells.index("rounds: x first min-max")] == "3.00-3.00"
    one = {**result, "settings": {**settings, "repeats": 1}}
    old = {**result, "settings": {k: v for k, v in settings.items() if k != "repeats"}}
    assert format_speed_markdown(one) == format_speed_markdown(old) and "rounds" not in format_speed_markdown(one)
