"""rc.real.study: the real-models chapter's result objects (tables, glue), on pretrained MiniLM
(offline, a few tokens) and on curves built by hand where a value must be known exactly."""

from types import SimpleNamespace

import numpy as np
import pytest

import rankcollapse as rc

pytest.importorskip("transformers")
S = rc.real.study


@pytest.fixture(scope="module")
def minilm():
    return rc.real.load("all-MiniLM-L6-v2", True)


def test_show_marks_rounding_error():
    assert S.show(1.234e-4) == "1.23e-04"
    assert S.show(S.FLOOR) == "1.00e-12"
    assert S.show(0.0) == S.show(9e-13) == "< 1e-12"


def test_lineup_table_and_corpus(minilm):
    lineup = S.describe([minilm], 2, 16)
    header, rows = lineup.table()
    assert header == ["model", "layers", "weights"]
    assert rows == [[minilm.label, "6", minilm.source]]
    assert lineup.minilm is minilm
    text = lineup.corpus_text()
    n_words = sum(len(d.split()) for d in lineup.docs)
    assert text.startswith(f"{len(lineup.docs)} documents, {n_words:,} words.")
    assert max(map(len, text.splitlines())) <= 80 and text.endswith("...")
    glued = lineup.glue()
    assert glued["rm-minilm-layers"] == (6, "{}") and glued["rm-n-seq"] == (2, "{}")
    assert glued["rm-minilm-heads"][0] == 12 and glued["rm-minilm-width"][0] == 384


def test_ablations_and_their_tables_on_minilm(minilm):
    ab = S.ablations([minilm], 1, 12, batch_size=1, progress=False)
    assert set(ab.curves) == {(minilm.label, v, s) for v, s in rc.real.ABLATIONS}
    for curve in ab.curves.values():
        assert curve.shape == (1, 7) and np.all(curve >= 0)
    header, rows = ab.table()
    assert header == ["model", "variant", "surgery", "layer 1", "layer 2", "last layer"]
    assert len(rows) == len(ab.curves) and all(len(r) == len(header) for r in rows)
    full = ab.typical(minilm, "full", "clean")
    assert [minilm.label, "full", "clean", S.show(full[1]), S.show(full[2]), S.show(full[-1])] in rows
    header, rows = ab.surgery_table()
    assert header[:3] == ["model", "variant", "layer"] and len(rows) == 3
    san = [r for r in rows if r[1] == "san"][0]
    assert san[2] == "3" and san[3] == S.show(ab.typical(minilm, "san", "paper")[3])
    assert san[6] == S.show(ab.typical(minilm, "san", "clean")[-1])


def _fake(name, pretrained=False, n_layers=3):
    return SimpleNamespace(name=name, label=name + (" (pretrained)" if pretrained else ""),
                           pretrained=pretrained, n_layers=n_layers)


def test_ablations_glue_reads_the_curves_it_is_given():
    """Hand-made curves with known values: each glued value is the one the prose says."""
    models = [_fake("bert-base-cased"), _fake("albert-base-v2"), _fake("xlnet-base-cased"),
              _fake("all-MiniLM-L6-v2", True)]
    curves = {}
    for i, m in enumerate(models):
        for v, s in rc.real.ABLATIONS:
            if v == "san":   # a decade per layer (BERT: thirteen)
                c = 10.0 ** -((13 if m.name == "bert-base-cased" else 1) * np.arange(4.0))
            elif v == "san+skip":
                c = np.array([1.0, 0.9, 0.8, 0.5 + 0.1 * i])
            else:
                c = np.array([1.0, 0.95, 0.9, 0.8])
            curves[(m.label, v, s)] = np.stack([c, c])  # two sequences, the same curve
    glued = S.Ablations(models, curves).glue()
    assert glued["rm-bert-floor"] == (1, "{}")             # 1e-13 < 1e-12 after layer 1
    assert glued["rm-minilm-floor"][0] != glued["rm-minilm-floor"][0]  # never below: nan
    assert glued["rm-xlnet-decades"][0] == pytest.approx(1.0)
    assert glued["rm-albert-skip-clean"][0] == pytest.approx(0.6)
    assert glued["rm-skip-min"][0] == pytest.approx(0.5)
    assert glued["rm-full-min"][0] == glued["rm-full-max"][0] == pytest.approx(0.8)
    assert glued["rm-minilm-san-paper-2"][0] == pytest.approx(1e-2)


def test_centres_on_minilm(minilm):
    c = S.centres(minilm, 1, 8, variants=("full",))
    ratio = c.ratio("full")
    assert ratio.shape == (1, 7) and np.all(ratio <= 1 + 1e-9)  # the optimal centre is never worse
    header, rows = c.table()  # a row per layer, a column per variant and centre
    assert header == ["", "full: mean", "full: optimal"]
    assert [r[0] for r in rows] == ["input"] + [f"layer {l}" for l in range(1, 7)]
    assert all(len(r) == len(header) for r in rows)
    assert [r[1] for r in rows] == [S.show(x) for x in S.gmean(c.mean["full"])]
    assert [r[2] for r in rows] == [S.show(x) for x in S.gmean(c.optimal["full"])]
    assert c.glue()["rm-opt-ratio-max"][0] == ratio.max()


def test_path_products_table(minilm):
    p = S.path_products_study([minilm], 1, 10, 3, seed=0, batch_size=1)
    assert set(p.profiles) == {(minilm.label, o, a) for o in ("correct", "reversed") for a in ("mean", "rank1")}
    header, rows = p.table(lengths=8)
    assert header == ["model", "order"] + [f"length {k}" for k in range(1, 9)]
    assert rows[0][:2] == [minilm.label, "correct"] and rows[1][:2] == ["", "reversed"]
    assert rows[0][-2:] == ["", ""]  # six layers: no paths of 7 or 8 heads
    assert rows[0][2] == S.show(p.median(minilm, "correct", "mean", 1))
