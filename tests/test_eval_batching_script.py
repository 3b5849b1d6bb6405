"""benchmarks/eval_batching.py: the figures docs/speed.md quotes must time the same predictions
under each bound, count the padded tokens each bound builds, and write them to the table."""

import json

from conftest import load_benchmark_script
from tolerance import KERNEL


def test_a_bound_cuts_padding_keeps_the_probabilities_and_reaches_the_table(tmp_path):
    script = load_benchmark_script("eval_batching")
    output = tmp_path / "eval_batching"
    script.main(["--cases", "trec:fasttext-bag", "--budgets", "none", "64", "--documents", "120",
                 "--repeats", "1", "--output", str(output)])
    result = json.loads(output.with_suffix(".json").read_text())
    run = result["runs"]["trec:fasttext-bag"]
    assert run["documents"] == 120 and set(run["seconds"]) == {"none", "64"}
    # One batch of 120 questions padded to the longest without a bound; batches of at most 64
    # padded tokens with it: less padding, the same probabilities.
    assert run["padded_tokens"]["64"] < run["padded_tokens"]["none"]
    assert run["max_abs_probability_difference"]["64"] <= KERNEL["atol"]
    table = output.with_suffix(".md").read_text()
    assert "| trec | fasttext-bag | 120 |" in table and "x (64)" in table
