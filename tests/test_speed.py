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
