#!/usr/bin/env python3
"""Record the chapters' results (glued values, printed text, figure digests) to JSON, or compare
two such records: a refactor must change structure, not results. See ``booktools.compare``.

    python scripts/compare_outputs.py record before.json [--chapters paths] [--mode fast] [--seed 0]
    python scripts/compare_outputs.py record built.json --from _build/jupyter_execute/chapters
    python scripts/compare_outputs.py compare before.json after.json [--rtol 1e-12]
"""

import sys

from booktools.compare import main

if __name__ == "__main__":
    sys.exit(main())
