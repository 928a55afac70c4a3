"""The existing SDK's author API on this SDK: AgentEnvError fields, `@tool` options, `op`
extensions, the mount-time hooks, per-role tool rules (in the env and at the gateway), the client
helpers and ToolSession. Servers are real (uvicorn in a thread), clients are real httpx/MCP."""

from __future__ import annotations

from typing import TypedDict

import httpx
import pytest

from agentenv_protocol import (
    AgentEnvEnvironment,
    AgentEnvError,
    DataPart,
    EnvClient,
    EnvironmentExtension,
    ToolContext,
    ToolSession,
    ToolSessionError,
    add_data,
    bound,
    client,
    environment_card,
    extension,
    get_data,
    reset_data,
    tool,
)
from agentenv_protocol.gateway import Gateway, serve_gateway
from agentenv_protocol.server import EnvironmentApp
from agentenv_protocol.serving import serve_in_thread

pytestmark = pytest.mark.anyio


@environment_card(name="hooks")
class HooksEnv(AgentEnvEnvironment):
    def __init__(self) -> None:
        self.items: list = []

    @tool()
    def visible(self) -> str:
        """Marked description."""
        return "v"

    @tool()
    def dropped(self) -> str:
        return "d"

    @tool(hidden_by_default=True)
    def secret(self) -> str:
        return "s"

    @tool()
    def guarded(self) -> str:
        return "ran"

    @reset_data
    def _reset(self) -> None:
        self.items.clear()

    @add_data
    def _add(self, parts) -> None:
        self.items.extend(p.data for p in parts)

    @get_data
    def _get(self):
        return [DataPart(data={"items": self.items})]

    @extension("urn:agentenv:clockish/v1", op="get", method="GET")
    def clock_get(self) -> dict:
        return {"t": 1}

    @extension("urn:agentenv:clockish/v1", op="set")
    def clock_set(self, t: int) -> dict:
        return {"t": t}

    @extension("urn:agentenv:clockish/v1", op="clear")
    def clock_clear(self) -> dict:
        return {}

    def served_tools(self, tools):
        kept = [t for t in tools if t.name != "dropped"]
        return [
            t.model_copy(update={"description": "Chosen description."})
            if t.name == "visible"
            else t
            for t in kept
        ]

    def served_extensions(self, extensions):
        out = []
        for e in extensions:
            methods = {k: v for k, v in e.params["methods"].items() if k != "clear"}
            out.append(e.model_copy(update={"params": {**e.params, "methods": methods}}))
        return out

    def served_operations(self, operations):
        return [m for m in operations if m != "data/reset"]

    def extension_params(self, uri: str) -> dict:
        return {"features": ["virtual-time"]}

    def declared_extensions(self):
        return [EnvironmentExtension(uri="urn:agentenv:intake/v1", params={"formats": ["json"]})]

    def on_tool_call(self, context: ToolContext):
        if context.tool == "guarded" and context.caller.role != "admin":
            import mcp.types as mt

            return mt.CallToolResult.model_validate(
                {"content": [{"type": "text", "text": "refused"}], "isError": True}
            )
        return None


@pytest.fixture
def hooks():
    env = HooksEnv()
    with serve_in_thread(env.create_app()) as server:
        yield env, server.url


def test_agentenv_error_keeps_the_existing_str_fields_and_refuses_bad_values():
    error = AgentEnvError("busy", "try later", retryable=True, applied="unknown", hint="h")
    assert str(error) == "try later"
    assert error.fields() == {
        "code": "busy",
        "message": "try later",
        "retryable": True,
        "applied": "unknown",
        "hint": "h",
    }
    assert AgentEnvError("c", "m").fields() == {
        "code": "c",
        "message": "m",
        "retryable": False,
        "applied": "no",
    }
    assert AgentEnvError("c", "m").status == 400
    with pytest.raises(ValueError, match="applied must be one of"):
        AgentEnvError("c", "m", applied="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="HTTP error status"):
        AgentEnvError("c", "m", status=200)


def test_decorator_and_hook_mistakes_name_what_is_wrong():
    with pytest.raises(TypeError, match="annotations= must be a dict"):
        tool(annotations=["readOnlyHint"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="structured_output="):
        tool(structured_output="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="did you mean 'hidden_by_default'"):
        tool(hiden_by_default=True)
    with pytest.raises(TypeError, match="did you mean 'method'"):
        extension("urn:x/v1", metod="GET")
    with pytest.raises(TypeError, match="extension_params"):
        extension("urn:x/v1", op="get", params={"a": 1})

    class TwoOps(AgentEnvEnvironment):
        @extension("urn:x/v1", op="get")
        def a(self) -> dict:
            return {}

        @extension("urn:x/v1", op="get", path="/other")
        def b(self) -> dict:
            return {}

    with pytest.raises(ValueError, match="two handlers serve method 'get' of extension urn:x/v1"):
        EnvironmentApp(TwoOps())

    class MixedOps(AgentEnvEnvironment):
        @extension("urn:x/v1", op="get")
        def a(self) -> dict:
            return {}

        @extension("urn:x/v1")
        def b(self) -> dict:
            return {}

    with pytest.raises(ValueError, match="give each an op="):
        EnvironmentApp(MixedOps())

    class BadServed(AgentEnvEnvironment):
        @tool()
        def search(self) -> str:
            return ""

        def served_tools(self, tools):
            return [t.model_copy(update={"name": "serch"}) for t in tools]

    with pytest.raises(
        ValueError, match=r"no @tool method: \['serch'\] \(did you mean 'search'\?\)"
    ):
        EnvironmentApp(BadServed())

    class BadOps(AgentEnvEnvironment):
        def served_operations(self, operations):
            return ["data/get"]

    with pytest.raises(ValueError, match="operations with no handler"):
        EnvironmentApp(BadOps())

    class Clash(AgentEnvEnvironment):
        @extension("urn:x/v1")
        def a(self) -> dict:
            return {}

        def declared_extensions(self):
            return [EnvironmentExtension(uri="urn:x/v1")]

    with pytest.raises(ValueError, match="both declared and served"):
        EnvironmentApp(Clash())

    class Untyped(AgentEnvEnvironment):
        @tool(structured_output=True)
        def x(self):
            return 1

    with pytest.raises(ValueError, match="needs a return annotation"):
        EnvironmentApp(Untyped())


async def test_hooks_choose_what_is_served(hooks):
    env, url = hooks
    card = httpx.get(url + "/.well-known/agent-env.json").json()
    tools = {t["name"]: t for t in card["capabilities"]["tools"]}
    assert sorted(tools) == ["guarded", "secret", "visible"]
    assert tools["visible"]["description"] == "Chosen description."
    assert card["capabilities"]["operations"] == ["data/add", "data/get"]
    exts = {e["uri"]: e for e in card["capabilities"]["extensions"]}
    clock = exts["urn:agentenv:clockish/v1"]["params"]
    assert clock["features"] == ["virtual-time"]
    assert clock["methods"]["get"] == {
        "method": "GET",
        "endpoint": "/agentenv/ext/clockish/get",
        "request": {"type": "object", "properties": {}},
    }
    assert sorted(clock["methods"]) == ["get", "set"]
    assert exts["urn:agentenv:intake/v1"]["params"] == {"formats": ["json"]}
    assert httpx.post(url + "/agentenv/ext/clockish/clear", json={}).status_code in (404, 405)
    reset = httpx.post(url + "/agentenv", json={"jsonrpc": "2.0", "id": 1, "method": "data/reset"})
    assert reset.json()["error"]["code"] == -32601
    async with EnvClient(url) as env_client:
        listed = {t.name: t for t in await env_client.list_tools()}
        assert listed["visible"].description == "Chosen description."
        refused = await env_client.call_tool("guarded")
        assert refused.is_error and refused.text == "refused"
        await env.update_tool("visible", description="Updated.")
        listed = {t.name: t for t in await env_client.list_tools()}
        assert listed["visible"].description == "Updated."
    served = {t.name: t for t in env.mounted_card().capabilities.tools}
    assert served["visible"].description == "Updated."
    with pytest.raises(ValueError, match="did you mean 'visible'"):
        await env.update_tool("visibel", description="x")


async def test_client_helpers_drive_an_env_from_its_card(hooks):
    _env, url = hooks
    card = await client.get_card(url)
    assert client.find_tool(card, "secret")["name"] == "secret"
    assert client.find_tool(card, "nope") is None
    assert client.mcp_path(card) == "/mcp"
    assert client.find_child(card, "x") is None
    assert client.intake_declaration(card) == {"formats": ["json"]}
    assert client.extension_params(card, "urn:agentenv:clockish/v1")["features"] == ["virtual-time"]
    method = client.find_extension_method(card, "urn:agentenv:clockish/v1", "set")
    assert method["endpoint"] == "/agentenv/ext/clockish/set" and method["method"] == "POST"
    uri = "urn:agentenv:clockish/v1"
    assert await client.invoke_extension(url, card, uri, method="get") == {"t": 1}
    assert await client.invoke_extension(url, card, uri, {"t": 5}, method="set") == {"t": 5}
    with pytest.raises(client.ExtensionCallError) as failed:
        await client.invoke_extension(url, card, uri, {"t": 5, "x": 1}, method="set")
    assert (failed.value.code, failed.value.applied, failed.value.retryable) == (
        "invalid_params",
        "no",
        False,
    )
    assert failed.value.response.status_code == 400
    with pytest.raises(ValueError, match="advertises: get, set"):
        await client.invoke_extension(url, card, uri, method="clear")
    with pytest.raises(ValueError, match="not advertised"):
        await client.invoke_extension(url, card, "urn:agentenv:nope/v1")
    await client.add_data(url, [DataPart(data={"a": 1})])
    got = await client.get_data(url)
    assert got.parts[0].data == {"items": [{"a": 1}]}
    with pytest.raises(RuntimeError, match="method not found"):
        await client.reset_data(url)
    assert await client.supports_v1(url) is True
    assert await client.supports_v1(url + "/nothing-here") is False


async def test_toolsession_lists_calls_and_reports_failures(hooks):
    _env, url = hooks
    async with ToolSession(mcp_url=url + "/mcp", role="admin") as session:
        names = [t.name for t in await session.list_tools()]
        assert sorted(names) == ["guarded", "secret", "visible"]
        result = await session.call_tool("guarded", {})
        assert (result.text, result.isError) == ("ran", False)
        missing = await session.call_tool("nope", {})
        assert missing.isError and "unknown tool 'nope'" in missing.text
    with pytest.raises(RuntimeError, match="not open"):
        await session.list_tools()
    # opening initializes the session, so a wrong path or a gone server fails at open
    with pytest.raises(ToolSessionError, match="initialize: HTTP 404"):
        await ToolSession(mcp_url=url + "/not-mcp").open()
    with pytest.raises(httpx.TransportError):
        await ToolSession(mcp_url="http://127.0.0.1:9/mcp", timeout=5).open()


@environment_card(name="guarded")
class AccessEnv(AgentEnvEnvironment):
    tool_access = True

    @tool()
    def read(self) -> str:
        return "r"

    @tool(hidden_by_default=True)
    def advance(self) -> str:
        return "a"


async def test_tool_access_in_the_env_hides_and_refuses_by_role():
    with serve_in_thread(AccessEnv().create_app()) as server:
        card = httpx.get(server.url + "/.well-known/agent-env.json").json()
        uris = [e["uri"] for e in card["capabilities"]["extensions"]]
        assert uris == ["urn:agentenv:disable-tool/v1", "urn:agentenv:enable-tool/v1"]
        async with EnvClient(server.url, role="alice") as alice:
            assert [t.name for t in await alice.list_tools()] == ["read"]
            refused = await alice.call_tool("advance")
            assert refused.is_error and refused.structured["code"] == "permission_denied"
            # a rule for every tool never shows a hidden one; naming it does
            everything = httpx.post(
                server.url + "/tools/enable", json={"role": "alice", "tools": "*"}
            )
            assert everything.json() == {"role": "alice", "disabled": [], "allowed": ["*"]}
            assert [t.name for t in await alice.list_tools()] == ["read"]
            httpx.post(server.url + "/tools/enable", json={"role": "alice", "tools": ["advance"]})
            assert sorted(t.name for t in await alice.list_tools()) == ["advance", "read"]
            assert (await alice.call_tool("advance")).text == "a"
        async with EnvClient(server.url, role="bob") as bob:
            assert [t.name for t in await bob.list_tools()] == ["read"]
        bad = httpx.post(server.url + "/tools/enable", json={"role": "alice", "tools": 3})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_params"


async def test_gateway_hides_a_hidden_by_default_tool_until_a_rule_names_it(tmp_path):
    with serve_in_thread(HooksEnv().create_app()) as env_server:
        gateway = Gateway({"hooks": env_server.url}, trajectory=tmp_path / "calls.jsonl")
        server = serve_gateway(gateway)
        try:
            token = gateway.issue_token("alice")
            admin = {"authorization": f"Bearer {gateway.admin_token}"}
            async with EnvClient(server.url, token=token) as alice:
                assert "secret" not in [t.name for t in await alice.list_tools()]
                assert (await alice.call_tool("secret")).is_error
                httpx.post(
                    server.url + "/tools/enable",
                    json={"role": "*", "tools": "*"},
                    headers=admin,
                ).raise_for_status()
                assert "secret" not in [t.name for t in await alice.list_tools()]
                httpx.post(
                    server.url + "/tools/enable",
                    json={"role": "alice", "tools": ["secret"]},
                    headers=admin,
                ).raise_for_status()
                assert "secret" in [t.name for t in await alice.list_tools()]
                assert (await alice.call_tool("secret")).text == "s"
        finally:
            server.stop()


def test_card_keeps_null_keys_like_the_existing_sdk():
    class Bare(AgentEnvEnvironment):
        pass

    with serve_in_thread(Bare().create_app()) as server:
        card = httpx.get(server.url + "/.well-known/agent-env.json").json()
    assert card["children_environments"] is None
    assert card["capabilities"] == {"extensions": None, "tools": None, "operations": []}


def test_as_caller_binds_a_context_outside_any_call():
    with bound(ToolContext.as_caller("alice", "s1", tool="seed")) as context:
        assert ToolContext.current() is context
        assert (context.caller.role, context.caller.session, context.tool) == (
            "alice",
            "s1",
            "seed",
        )
    assert ToolContext.as_caller("default").caller.role is None


class NoBase:
    """A handler without the base class, served in the composition style."""

    @get_data
    def _get(self):
        return [DataPart(data={"ok": True})]

    @extension("urn:x:hello/v1")
    def hello(self, name: str, ctx: ToolContext) -> dict:
        return {"hello": name, "role": ctx.caller.role}


def test_composition_style_on_a_starlette_app():
    from starlette.applications import Starlette

    from agentenv_protocol import AgentEnvStarletteApplication, EnvironmentCard

    app = Starlette()
    AgentEnvStarletteApplication(EnvironmentCard(name="plain"), NoBase()).add_routes_to_app(app)
    with serve_in_thread(app) as server:
        card = httpx.get(server.url + "/.well-known/agent-env.json").json()
        assert card["name"] == "plain" and card["capabilities"]["operations"] == ["data/get"]
        answer = httpx.post(
            server.url + "/agentenv/ext/hello",
            json={"name": "a"},
            headers={"AgentEnv-Role": "alice"},
        )
        assert answer.json() == {"hello": "a", "role": "alice"}
    with pytest.raises(
        ValueError, match=r"@tool methods \(visible, guarded, secret\)|need a FastMCP"
    ):
        AgentEnvStarletteApplication(EnvironmentCard(name="h"), HooksEnv())
    with pytest.raises(ValueError, match="other paths are not supported"):
        AgentEnvStarletteApplication(EnvironmentCard(name="p"), NoBase()).add_routes_to_app(
            app, rpc_url="/rpc"
        )


async def test_injecting_fills_the_context_for_another_registry():
    import inspect

    from agentenv_protocol import injecting

    def who(greeting: str, ctx: ToolContext) -> str:
        return f"{greeting} {ctx.caller.role}"

    async def awho(ctx: ToolContext, greeting: str = "hi") -> str:
        return f"{greeting} {ctx.caller.role}"

    plain, coro = injecting(who), injecting(awho)
    assert list(inspect.signature(plain).parameters) == ["greeting"]
    assert "ctx" not in plain.__annotations__
    with bound(ToolContext.as_caller("alice")):
        assert plain("hello") == "hello alice"
        assert await coro() == "hi alice"
    assert injecting(len) is len


def test_create_fastmcp_app_on_the_installed_mcp():
    from agentenv_protocol import EnvironmentCard, create_fastmcp_app

    try:
        import mcp.server.fastmcp  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"mcp>=1.25,<2"):
            create_fastmcp_app(NoBase(), card=EnvironmentCard(name="f"))
        return
    app = create_fastmcp_app(NoBase(), card=EnvironmentCard(name="f"))
    with serve_in_thread(app.streamable_http_app()) as server:
        card = httpx.get(server.url + "/.well-known/agent-env.json").json()
        assert card["name"] == "f" and card["capabilities"]["operations"] == ["data/get"]


class Partial(TypedDict, total=False):
    n: int
    label: str


class PartialEnv(AgentEnvEnvironment):
    @tool()
    def partial(self) -> Partial:
        return {"n": 1}


async def test_a_typeddict_result_leaves_absent_keys_out():
    # FastMCP sends {"n": 1, "label": null}, which its own output schema refuses
    with serve_in_thread(PartialEnv().create_app()) as server:
        async with EnvClient(server.url) as env:
            result = await env.call_tool("partial")
    assert result.structured == {"n": 1} and not result.is_error


async def test_a_mounted_env_answers_as_a_served_one():
    from mcp.server.fastmcp import FastMCP

    class Mounted(AgentEnvEnvironment):
        def __init__(self) -> None:
            self.mcp = FastMCP("mounted")
            self.mount(self.mcp)

        @tool(annotations={"readOnlyHint": True})
        def who(self, ctx: ToolContext) -> list[str]:
            return [ctx.caller.role or "", "x"]

        @tool()
        def busy(self) -> str:
            raise AgentEnvError("busy", "try later", retryable=True)

        @tool()
        def progress(self, ctx: FastMCPContext) -> str:  # type: ignore[valid-type]
            return f"request {ctx.request_id}"

    env = Mounted()
    with pytest.raises(RuntimeError, match="already mounted"):
        env.mount(env.mcp)
    with serve_in_thread(env.mcp.streamable_http_app()) as server:
        card = httpx.get(server.url + "/.well-known/agent-env.json").json()
        assert [t["name"] for t in card["capabilities"]["tools"]] == ["busy", "progress", "who"]
        async with ToolSession(mcp_url=server.url + "/mcp", role="alice") as session:
            who = await session.call_tool("who", {})
            assert [c["text"] for c in who.content] == ["alice", "x"]
            assert who.structured == {"result": ["alice", "x"]}
            busy = await session.call_tool("busy", {})
            assert busy.isError and busy.text == "busy: try later"
            assert busy.structured["retryable"] is True
            progress = await session.call_tool("progress", {})
            assert not progress.isError and progress.text.startswith("request ")
        listed = {t.name: t for t in await env.mcp.list_tools()}
        assert listed["busy"].outputSchema["required"] == ["result"]
        assert listed["who"].annotations.readOnlyHint is True


def _fastmcp_context_type():
    try:
        from mcp.server.fastmcp import Context
    except ImportError:
        from mcp.server.mcpserver import Context  # mcp 2.x's name
    return Context


FastMCPContext = _fastmcp_context_type()


class TakesFastMCPContext(AgentEnvEnvironment):
    @tool()
    def progress(self, steps: int, ctx: FastMCPContext) -> str:  # type: ignore[valid-type]
        return f"{steps} steps, context given: {ctx is not None}"


async def test_a_fastmcp_context_parameter_is_not_an_argument():
    env = TakesFastMCPContext()
    assert env.card.capabilities.tools[0].inputSchema == {
        "type": "object",
        "properties": {"steps": {"type": "integer"}},
        "required": ["steps"],
    }
    with serve_in_thread(env.create_app()) as server:
        async with EnvClient(server.url) as client_:
            result = await client_.call_tool("progress", {"steps": 2})
    # served by this SDK there is no FastMCP to hand one over; a mounted env gets FastMCP's
    assert (result.is_error, result.text) == (False, "2 steps, context given: False")
