"""A mailbox that lives on the env clock.

It advertises `urn:agentenv:clock/v1`: `sync_env_clock` hands it the gateway's
`env_get_time_url`, so every email and reply is stamped with the task's virtual time instead
of the machine's. `deliver_email` is what the task's trigger calls; the agent waits for mail,
reads it and replies.
"""

import asyncio
import json
import urllib.request
from datetime import UTC, datetime

from agentenv_protocol import AgentEnvEnvironment, AgentEnvError, environment_card, extension, tool


@environment_card(name="mail")
class Mail(AgentEnvEnvironment):
    def __init__(self):
        self.time_url = None
        self.inbox = []
        self.sent = []

    @extension("urn:agentenv:clock/v1")
    def use_env_clock(self, env_get_time_url: str) -> dict:
        """Read the time from the env clock from now on."""
        self.time_url = env_get_time_url
        return {"ok": True}

    async def _now(self) -> str:
        if self.time_url is None:
            return datetime.now(UTC).isoformat().replace("+00:00", "Z")

        def read():
            with urllib.request.urlopen(self.time_url, timeout=5) as response:
                return json.loads(response.read())["virtual_time"]

        return await asyncio.to_thread(read)

    @tool()
    async def deliver_email(self, email_id: str, sender: str, subject: str, body: str) -> dict:
        """Put an email in the inbox (the task's trigger sends it)."""
        self.inbox.append(
            {
                "email_id": email_id,
                "from": sender,
                "subject": subject,
                "body": body,
                "received_at": await self._now(),
            }
        )
        return {"delivered": email_id}

    @tool()
    async def wait_for_email(self, timeout_seconds: float = 30) -> list:
        """The inbox, once it holds at least one email (waits up to timeout_seconds)."""
        for _ in range(int(timeout_seconds * 10)):
            if self.inbox:
                break
            await asyncio.sleep(0.1)
        return list(self.inbox)

    @tool()
    async def send_reply(self, email_id: str, body: str) -> dict:
        """Reply to an email in the inbox."""
        if email_id not in {m["email_id"] for m in self.inbox}:
            raise AgentEnvError("not_found", f"no email {email_id!r} in the inbox")
        reply = {"email_id": email_id, "body": body, "sent_at": await self._now()}
        self.sent.append(reply)
        return reply

    @tool()
    def list_sent(self) -> dict:
        """Every reply sent, and the inbox it answered."""
        return {"sent": list(self.sent), "inbox": list(self.inbox)}


if __name__ == "__main__":
    Mail().serve()
