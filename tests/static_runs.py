"""What the sentence-vector presets' tests share (static-lr, static-finetune, minilm-encoder-lr)."""

import numpy as np

from textcls import Classifier


def assert_the_saved_run_predicts_alone(fitted, texts, folder, monkeypatch):
    """A run of a static-vector preset carries its tokenizer and vectors: once saved, it loads
    and gives the same probabilities with the distilled cache made unreadable. Returns the
    loaded classifier."""
    fitted.save_pretrained(folder)
    monkeypatch.setattr("textcls.text.embeddings.minilm_static_model",
                        lambda: (_ for _ in ()).throw(AssertionError("the run read the cache")))
    again = Classifier.from_pretrained(folder)
    probabilities = fitted.predict_proba(texts)
    assert probabilities.shape == (len(texts), len(fitted.classes_))  # one row of class probabilities a text
    np.testing.assert_array_equal(again.predict_proba(texts), probabilities)
    return again


def assert_it_beats_the_majority_class(fitted, split, margin: float) -> float:
    """The fitted classifier's accuracy on ``split`` (texts and labels) is more than ``margin``
    above always predicting the split's most frequent label. Returns the accuracy."""
    labels = list(split["label"])
    accuracy = float(np.mean(np.array(fitted.predict(list(split["text"]))) == np.array(labels)))
    majority = max(labels.count(c) for c in set(labels)) / len(labels)
    assert accuracy > majority + margin, (accuracy, majority)
    return accuracy


def train_refusal(tmp_path, capsys, model: str, *options: str) -> str:
    """``textcls train -m MODEL`` on a small two-class CSV with ``options``, which must be refused:
    exit 2, one line on stderr, no run folder. Returns that line."""
    import pytest

    from textcls.cli import main

    data = tmp_path / "d.csv"
    data.write_text("text,label\n" + "".join(f"good fine {i},pos\nbad poor {i},neg\n" for i in range(20)))
    with pytest.raises(SystemExit) as done:
        main(["train", "-m", model, "-d", str(data), *options, "--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert done.value.code == 2 and not (tmp_path / "run").exists() and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err
