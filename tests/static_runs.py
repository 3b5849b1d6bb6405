"""What the static-vector presets' tests share (static-lr, static-finetune)."""

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
    np.testing.assert_array_equal(again.predict_proba(texts), fitted.predict_proba(texts))
    return again
