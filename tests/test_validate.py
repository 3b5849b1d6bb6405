"""The one validation module: every layer's parameter checks give the same one-line errors."""

import numpy as np
import pytest

from textcls import Classifier
from textcls.data.splits import check_max_per_split
from textcls.errors import ConfigError
from textcls.recipe import Recipe
from textcls.validate import (check_choice, check_flag, check_folder_path, check_int, check_probability,
                              find_lone_surrogate, range_check)


@pytest.mark.parametrize("value", ["many", None, [1], {"a": 1}, True, 1j])
def test_range_check_refuses_non_numbers_with_one_line(value):
    with pytest.raises(ConfigError, match=r"parameter 'epochs' = .* must be a number in \[1, 10\]") as err:
        range_check("epochs", value, 1, 10)
    assert "\n" not in str(err.value)


def test_range_check_bounds():
    range_check("lr", 1e-3, 0.0, 1.0, low_open=True)
    range_check("x", np.float32(0.5), 0, 1)
    with pytest.raises(ConfigError, match=r"'lr' = 0.0 is outside its allowed range \(0.0, 1.0\]"):
        range_check("lr", 0.0, 0.0, 1.0, low_open=True)
    with pytest.raises(ConfigError, match=r"'p' = 1 is outside its allowed range \[0, 1\)"):
        range_check("p", 1, 0, 1, high_open=True)
    with pytest.raises(ConfigError, match=r"'n' = nan is outside its allowed range \[0, inf\)"):
        range_check("n", float("nan"), 0)


def test_check_int():
    assert check_int("n", np.int64(3), 1, 5) == 3 and type(check_int("n", np.int64(3), 1, 5)) is int
    assert check_int("n", None, 1, 5, optional=True) is None
    with pytest.raises(ConfigError, match=r"'n' = 1.5 is outside its allowed range: an integer in \[1, 5\]"):
        check_int("n", 1.5, 1, 5)
    with pytest.raises(ConfigError, match=r"'n' = True is outside"):
        check_int("n", True, 0, 5)
    with pytest.raises(ConfigError, match=r"'n' = 0 is outside its allowed range \[1, 5\] or none"):
        check_int("n", 0, 1, 5, optional=True)
    with pytest.raises(ConfigError, match=r"'n' = -1 is outside its allowed range \[0, inf\)"):
        check_int("n", -1, 0, None)


def test_choice_flag_probability():
    check_choice("pooling", "max", ("max", "mean"))
    check_flag("static", False)
    check_probability("dropout", 0.0)
    with pytest.raises(ConfigError, match=r"'pooling' = 'sum' is not one of max, mean"):
        check_choice("pooling", "sum", ("max", "mean"))
    with pytest.raises(ConfigError, match=r"'static' = 1 must be true or false"):
        check_flag("static", 1)
    with pytest.raises(ConfigError, match=r"'dropout' = 1.0 is outside its allowed range \[0, 1\)"):
        check_probability("dropout", 1.0)


def test_max_per_split_is_checked_in_one_place():
    assert check_max_per_split(5) == 5
    with pytest.raises(ConfigError, match=r"'max_per_split' = 0 is outside its allowed range \[1, inf\)"):
        check_max_per_split(0)


@pytest.mark.parametrize("field, value", [("epochs", "many"), ("lr", "fast"), ("batch_size", [32]),
                                          ("patience", "3"), ("grad_clip", True)])
def test_recipe_refuses_values_of_the_wrong_type(field, value):
    with pytest.raises(ConfigError, match=f"parameter '{field}' = .* must be a number"):
        Recipe(**{field: value})


def test_classifier_with_a_string_for_epochs_is_a_config_error():
    with pytest.raises(ConfigError, match=r"parameter 'epochs' = 'many' must be a number in \[1, 100000\]"):
        Classifier("tfidf-lr", epochs="many").fit(["a good film", "a bad film"], ["pos", "neg"])


def test_find_lone_surrogate_gives_the_first_one_counted_from_0():
    texts = ["fine", "caf\u00e9 \U0001F600", "ab\udce9c\ud800", "\ud800"]
    assert find_lone_surrogate(texts) == (2, 2, "\udce9")  # the first text, then its first character
    assert find_lone_surrogate(texts, rows=[3, 2]) == (3, 0, "\ud800")  # in the order of ``rows``
    assert find_lone_surrogate(texts[:2]) is None  # non-ASCII and astral characters are Unicode
    assert find_lone_surrogate(texts, rows=[]) is None and find_lone_surrogate([]) is None
    # A surrogate pair written as one astral character is fine; its two halves apart are not.
    assert find_lone_surrogate(["\ud83d\ude00"]) == (0, 0, "\ud83d")


def test_check_folder_path_refuses_a_symlink_loop_by_the_parameter_name(tmp_path):
    # Was: a loop does not "exist" to Path.exists, so it passed as a folder still to be made.
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for folder in (tmp_path / "loop", tmp_path / "loop" / "sub"):
        with pytest.raises(ConfigError, match=f"^run_dir {folder}: leads through a symlink loop .*name another folder$"):
            check_folder_path("run_dir", folder)
    assert [p.name for p in tmp_path.iterdir()] == ["loop"]
