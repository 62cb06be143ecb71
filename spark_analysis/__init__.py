"""PySpark analysis: run logs -> the paper's tables and figures, with statistics (issue 6)."""
