"""An embedding column that is pgvector's `vector(n)` on PostgreSQL and a float32 BLOB on SQLite."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper


class EmbeddingField(models.Field):
    """A fixed-dimension float32 vector; Python value is a numpy array or None."""

    description = "Embedding vector"

    def __init__(self, *args: Any, dimensions: int = 384, **kwargs: Any) -> None:
        self.dimensions = dimensions
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs["dimensions"] = self.dimensions
        return name, path, args, kwargs

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        if connection.vendor == "postgresql":
            return f"vector({self.dimensions})"
        return "blob"

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> Any:
        return self.to_python(value)

    def to_python(self, value: Any) -> Any:
        if value is None or isinstance(value, np.ndarray):
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return np.frombuffer(bytes(value), dtype=np.float32)
        if isinstance(value, str):
            return np.array(
                [float(x) for x in value.strip("[]").split(",") if x.strip()], dtype=np.float32
            )
        return np.asarray(value, dtype=np.float32)

    def get_db_prep_value(
        self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False
    ) -> Any:
        if value is None:
            return None
        array = np.asarray(value, dtype=np.float32)
        if array.shape != (self.dimensions,):
            raise ValueError(f"expected {self.dimensions} dimensions, got shape {array.shape}")
        if connection.vendor == "postgresql":
            return "[" + ",".join(map(repr, array.tolist())) + "]"
        return array.tobytes()
