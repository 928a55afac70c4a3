"""A bank whose accounts arrive through the data plane.

The task's `load_artifact` step (`via = "data_plane"`) sends `accounts.json` to `@add_data`
before the agent's turn; `@get_data` gives the balances and the transfer log back, which the
verifier reads with `agentenv_protocol.verifier.env_data`.
"""

from agentenv_protocol import (
    AgentEnvEnvironment,
    AgentEnvError,
    add_data,
    environment_card,
    get_data,
    reset_data,
    tool,
)


@environment_card(name="bank")
class Bank(AgentEnvEnvironment):
    def __init__(self):
        self.accounts = {}
        self.log = []

    @reset_data
    def reset(self):
        self.accounts, self.log = {}, []

    @add_data
    def seed(self, parts):
        for part in parts:
            data = getattr(part, "data", None)
            if not isinstance(data, dict) or "accounts" not in data:
                raise ValueError("expected a data part {accounts: {name: cents}}")
            for name, cents in data["accounts"].items():
                if not isinstance(cents, int):
                    raise ValueError(f"{name}: balance {cents!r} is not whole cents")
                self.accounts[name] = cents

    @get_data
    def state(self):
        return [{"kind": "data", "data": {"accounts": self.accounts, "log": self.log}}]

    @tool()
    def list_accounts(self) -> list[str]:
        """The account names."""
        return sorted(self.accounts)

    @tool()
    def balance(self, account: str) -> dict:
        """An account's balance in cents."""
        if account not in self.accounts:
            raise AgentEnvError("not_found", f"no account {account!r}")
        return {"account": account, "cents": self.accounts[account]}

    @tool()
    def transfer(self, source: str, target: str, cents: int) -> dict:
        """Move `cents` from `source` to `target`."""
        for name in (source, target):
            if name not in self.accounts:
                raise AgentEnvError("not_found", f"no account {name!r}")
        if cents <= 0 or self.accounts[source] < cents:
            raise AgentEnvError("invalid", f"cannot move {cents} cents from {source!r}")
        self.accounts[source] -= cents
        self.accounts[target] += cents
        self.log.append({"source": source, "target": target, "cents": cents})
        return {"ok": True, "balance": self.accounts[source]}


if __name__ == "__main__":
    Bank().serve()
