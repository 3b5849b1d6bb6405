"""``textcls speed --predict``'s report: ratios to fastText and the issue's targets (no timing here)."""

from __future__ import annotations

import json
import os

import pytest

from textcls.benchmark.predict_speed import _result, run_predict_speed, write_predict_report
from textcls.errors import ConfigError


def _row(model, docs_per_second, p50_ms):
    return {"model": model, "kind": "peer" if model == "fasttext" else "textcls", "backend": "x", "accuracy": 0.7,
            "docs_per_second": docs_per_second, "docs_per_second_all": [docs_per_second], "p50_ms": p50_ms,
            "p99_ms": 2 * p50_ms, "calls": 1000}


def test_ratios_and_targets(tmp_path):
    rows = [_row("fasttext", 100_000.0, 0.01), _row("fasttext-bag", 60_000.0, 0.08), _row("spe-cnn", 70_000.0, 0.4),
            _row("kim-cnn-static", 40_000.0, 0.2), _row("lstm", 5_000.0, 1.0)]
    rows[2].update(tokenise_us_per_doc=7.04, forward_us_per_doc=10.26)  # a NumPy run's two stages
    result = _result(rows, data="mr", docs=20_000, rounds=3, epochs=1, threads=1, load=((1.0, 1, 1), (2.0, 2, 2)))
    by_model = {r["model"]: r for r in result["rows"]}
    assert by_model["fasttext-bag"]["throughput_ratio_to_fasttext"] == pytest.approx(0.6)
    assert by_model["fasttext-bag"]["p50_ratio_to_fasttext"] == pytest.approx(8.0)
    assert by_model["fasttext-bag"]["target_met"]  # 60% of fastText, p50 0.08 ms
    assert not by_model["spe-cnn"]["target_met"]  # 70,000 docs/s but p50 0.4 ms
    assert not by_model["kim-cnn-static"]["target_met"]  # p50 0.2 ms but 40,000 docs/s
    assert "target" not in by_model["lstm"]
    files = write_predict_report(result, tmp_path / "predict_speed", "textcls speed --predict -o x")
    text = files["markdown"].read_text()
    assert "Command: `textcls speed --predict -o x`" in text and "load average 1.0 before and 2.0 after" in text
    assert "| fasttext-bag | textcls | x | 60,000 | 0.60 | 0.080 |" in text and "missed: 50,000 docs/s" in text
    assert "spe-cnn: tokenising 7.0, forward pass 10.3." in text and "lstm: tokenising" not in text
    assert json.loads(files["json"].read_text())["machine"]["cpu_model"] == result["machine"]["cpu_model"]
    # A folder that exists is written into (-o out wrote out.json and out.md beside the folder).
    (tmp_path / "out").mkdir()
    files = write_predict_report(result, tmp_path / "out", None)
    assert files == {"json": tmp_path / "out" / "predict_speed.json", "markdown": tmp_path / "out" / "predict_speed.md"}
    assert all(p.is_file() for p in files.values()) and not (tmp_path / "out.json").exists()


def test_an_output_with_a_trailing_slash_is_a_folder_to_make(tmp_path, capsys, monkeypatch):
    from textcls.cli import main

    result = _result([_row("fasttext", 100_000.0, 0.01), _row("fasttext-bag", 60_000.0, 0.08)], data="mr", docs=20_000,
                     rounds=3, epochs=1, threads=1, load=((1.0, 1, 1), (2.0, 2, 2)))
    monkeypatch.setattr("textcls.benchmark.predict_speed.run_predict_speed", lambda *args, **kwargs: result)
    main(["speed", "--predict", "-o", str(tmp_path / "new" / "out") + os.sep])
    # Path dropped the slash: it wrote new/out.json and new/out.md.
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.*")) == [
        "new/out/predict_speed.json", "new/out/predict_speed.md"]
    assert capsys.readouterr().out.endswith(f"wrote {tmp_path / 'new' / 'out' / 'predict_speed.json'}, "
                                            f"{tmp_path / 'new' / 'out' / 'predict_speed.md'}\n")


def test_fewer_than_1000_latency_calls_are_refused():
    with pytest.raises(ConfigError, match="parameter .calls. = 999 is outside its allowed range \\[1000, "):
        run_predict_speed(["fasttext-bag"], calls=999)
