"""The JSON that reads of an embedded store travel in between two processes (rag.store.reads: server and client).

Plain JSON values pass as they are; qdrant-client models as {"$model": class name, "value": their JSON}, rebuilt
with the class of that name in qdrant_client.models only (never an import or a pickle: the server decodes what a
client sends); the engine's answers (EdgePoint) as {"$point": [id, version, score, payload, vector]}; UUIDs as
strings, tuples as lists. A float survives the trip exactly (JSON writes the shortest repr that reads back the same
double), so a score read through the app equals the one the app's page shows.
"""

from __future__ import annotations

import uuid
from typing import Any

import pydantic
from qdrant_client import models

from rag.store.edge.api import EdgePoint

MODEL, POINT = "$model", "$point"
# what a read may raise in the holder, raised again by the reader (rag.store.client turns them into one-line errors)
ERRORS = {"ValueError": ValueError, "OSError": OSError, "RuntimeError": RuntimeError}


def encode(value: Any) -> Any:
    """Return value as JSON-ready data (see module); TypeError for anything else."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, EdgePoint):
        return {POINT: [value.id, value.version, value.score, encode(value.payload), encode(value.vector)]}
    if isinstance(value, pydantic.BaseModel):
        if getattr(models, type(value).__name__, None) is not type(value):
            raise TypeError(f"{type(value).__name__} is not a qdrant_client model")
        return {MODEL: type(value).__name__, "value": value.model_dump(mode="json", exclude_unset=True)}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return encode(value.item())
    raise TypeError(f"cannot send a {type(value).__name__} between processes")


def decode(data: Any) -> Any:
    """Return the value encode gave data for; ValueError for a model name qdrant_client.models does not have."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if POINT in data:
        point_id, version, score, payload, vector = data[POINT]
        return EdgePoint(point_id, version, score, decode(payload), decode(vector))
    if MODEL in data:
        cls = getattr(models, str(data[MODEL]), None)
        if not (isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)):
            raise ValueError(f"unknown model {data[MODEL]!r}")
        return cls.model_validate(data["value"])
    return {k: decode(v) for k, v in data.items()}
