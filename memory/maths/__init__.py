"""Scoring maths with no Django import: plain floats, datetimes and frozen dataclasses in and out.

Decay and activation, co-access, effectiveness quadrants, attribution and term matching,
injection ranking, text normalisation. A test fails if any module here imports Django.
"""
