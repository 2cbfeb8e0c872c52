"""The exercises of the chapter "Real transformers": references pass, plausible wrong answers
fail."""

import torch

import rankbook as book
import rankcollapse as rc


def test_path_product_reference_passes_and_reversed_order_fails():
    ex = book.checks.EXERCISES["real_models.path_product"]
    assert book.checks.check("real_models.path_product", ex.reference, quiet=True).passed

    def official_order(
        A, path
    ):  # what the paper's code computed: P = P @ A_l in increasing layer order
        P = torch.eye(A.shape[-1], dtype=A.dtype)
        for layer, head in path:
            P = P @ A[layer, head]
        return P

    result = book.checks.check("real_models.path_product", official_order, quiet=True)
    assert result.status == "incorrect" and "later layer" in result.message


def test_path_product_library_function_passes():
    def via_library(A, path):
        return rc.real.path_products(A[:, None], [list(path)])[0]

    assert book.checks.check("real_models.path_product", via_library, quiet=True).passed


def test_masked_residual_reference_passes_and_padding_fails():
    ex = book.checks.EXERCISES["real_models.masked_residual"]
    assert book.checks.check("real_models.masked_residual", ex.reference, quiet=True).passed

    def with_padding(X, mask):
        return float(rc.residual.relative_residual(X))

    result = book.checks.check("real_models.masked_residual", with_padding, quiet=True)
    assert result.status == "incorrect" and "padding" in result.message


def test_masked_residual_library_function_passes():
    def via_library(X, mask):
        return float(rc.real.relative_residuals(X[None, None], mask[None])[0, 0])

    assert book.checks.check("real_models.masked_residual", via_library, quiet=True).passed
