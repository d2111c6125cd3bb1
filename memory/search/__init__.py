"""Search over the engram store: the lexical and dense legs per database (`legs`)."""
