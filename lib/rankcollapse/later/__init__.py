"""Later results on rank collapse, each reproduced small with the book's core (chapter "After the paper").

One module per result, each with the measurement a section of the chapter draws and a ``verdict``:
``gradients`` (Noci et al. 2022), ``masks`` (Wu et al. 2024), ``lam`` (Joseph et al.), ``phases``
(Giorlandino and Goldt 2025), ``particles`` (Geshkovski et al.); ``verdicts`` collects the closing table.
"""
