"""The suite plot (accuracy against training seconds) stays legible: no label collides with another."""

from __future__ import annotations

from textcls.benchmark.report import accuracy_vs_time_figure, plot_accuracy_vs_time

MODELS = [f"model-{i:02d}-with-a-long-preset-name" for i in range(18)]


def _result(datasets: list[str], seconds) -> dict:
    entries = []
    for d, dataset in enumerate(datasets):
        for m, model in enumerate(MODELS):
            entries.append({"dataset": dataset, "model": model, "runs": [], "summary": {
                "accuracy": {"mean": 0.8 + 0.01 * m, "std": 0.01, "n": 3},
                "train_seconds": {"mean": seconds(d, m)},
            }})
    return {"suite": "plot_check", "entries": entries}


def _drawn(result: dict):
    fig = accuracy_vs_time_figure(result)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    return fig, renderer


def test_a_legend_of_four_rows_stays_below_every_panels_axis_labels():
    fig, renderer = _drawn(_result(["a", "b", "c", "d", "e"], lambda d, m: 5 + 3 * m))
    legend_top = fig.legends[0].get_window_extent(renderer).y1
    for ax in fig.axes:
        if ax.get_visible():
            assert ax.get_tightbbox(renderer).y0 > legend_top, ax.get_title()


def test_an_axis_within_one_decade_has_no_overlapping_tick_labels():
    # 2.5-36.5 s: under two decades, where matplotlib would also label the minor ticks.
    fig, renderer = _drawn(_result(["imdb"], lambda d, m: 2.5 + 2 * m))
    ax = fig.axes[0]
    boxes = sorted((label.get_window_extent(renderer) for label in ax.get_xticklabels(which="both")
                    if label.get_visible() and label.get_text()), key=lambda box: box.x0)
    assert boxes, "the axis lost every tick label"
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 <= right.x0, (left, right)


def test_the_plot_is_written_as_a_png(tmp_path):
    path = plot_accuracy_vs_time(_result(["a"], lambda d, m: 1 + m), tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
