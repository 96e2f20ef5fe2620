"""Log parsing: sources, lines, the prefilter, pyparsing grammars, metric series and detectors."""
