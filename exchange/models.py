"""Learning exchange models (identities, peers, packets) arrive with the exchange issue."""

from __future__ import annotations
