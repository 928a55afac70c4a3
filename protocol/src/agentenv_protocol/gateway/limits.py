"""Connections in use per role: a flood of slow or parallel requests from one role (an agent's
token) cannot take every connection the gateway serves, nor starve the verifier or the runner.

HTTP/1.1 carries one request at a time per connection, so the requests a role has in flight
are the connections it holds busy; idle keep-alive connections close after a few seconds, and
the server cuts off a client whose headers or body trickle (`serving.HEADER_TIMEOUT`).

The cap refuses (503 with Retry-After) rather than queues: a queued request still holds its
connection, so queueing would not bound what a role holds. It is high enough for a trainer's
batch (256 clients with 16 calls each in flight through one gateway); forwarded calls then
share a bounded pool of connections per env and wait their turn there (`fastpost.PostPool`)."""

from __future__ import annotations

#: The default cap on one role's concurrent requests: a rollout batch of 4,096 calls fits.
MAX_CONNECTIONS_PER_ROLE = 4096


class RoleConnections:
    """Counts each role's requests in flight; `take(key)` says whether one more may run."""

    def __init__(self, limit: int = MAX_CONNECTIONS_PER_ROLE) -> None:
        if limit < 1:
            raise ValueError(f"max connections per role must be at least 1, got {limit}")
        self.limit = limit
        self.in_use: dict[str, int] = {}

    def take(self, key: str) -> bool:
        """Count one more request of `key` in flight: False (nothing counted) at its limit."""
        count = self.in_use.get(key, 0)
        if count >= self.limit:
            return False
        self.in_use[key] = count + 1
        return True

    def give_back(self, key: str) -> None:
        """One request of `key` (counted by `take`) is done."""
        left = self.in_use[key] - 1
        if left:
            self.in_use[key] = left
        else:
            del self.in_use[key]
