"""What this plugin registers, as import paths: the hooks add them lazily, so a run imports
only the step types, env types and agent kinds its tasks use. Stdlib only."""

_STEPS = "agentenv_core_steps.steps"

#: Step type -> `module:Class`.
STEP_TYPES = {
    "deploy_sandbox": f"{_STEPS}.deploy_sandbox:DeploySandbox",
    "load_artifact": f"{_STEPS}.load_artifact:LoadArtifact",
    "verify_sandbox": f"{_STEPS}.verify_sandbox:VerifySandbox",
    "run_code": f"{_STEPS}.run_code:RunCode",
    "run_docker_container": f"{_STEPS}.run_docker_container:RunDockerContainer",
    "teardown_sandboxes": f"{_STEPS}.teardown_sandboxes:TeardownSandboxes",
    "aggregate_verifiers": f"{_STEPS}.aggregate_verifiers:AggregateVerifiers",
    "collect_artifacts": f"{_STEPS}.collect_artifacts:CollectArtifacts",
    # envs
    "deploy_env": f"{_STEPS}.deploy_env:DeployEnv",
    "reset_env": f"{_STEPS}.reset_env:ResetEnv",
    "env_outcome_verifier": f"{_STEPS}.env_outcome_verifier:EnvOutcomeVerifier",
    "modify_env_tool_access": f"{_STEPS}.modify_env_tool_access:ModifyEnvToolAccess",
    "snapshot_env": f"{_STEPS}.snapshot_env:SnapshotEnv",
    "snapshot_task": f"{_STEPS}.snapshot_task:SnapshotTask",
    "verify_env_card": f"{_STEPS}.verify_env_card:VerifyEnvCard",
    "verify_env_core_protocol": f"{_STEPS}.verify_env_core_protocol:VerifyEnvCoreProtocol",
    "verify_mcp_tool_schema": f"{_STEPS}.verify_mcp_tool_schema:VerifyMcpToolSchema",
    "sync_env_clock": f"{_STEPS}.sync_env_clock:SyncEnvClock",
    "register_env_triggers": f"{_STEPS}.register_env_triggers:RegisterEnvTriggers",
    # agents
    "deploy_agent": f"{_STEPS}.deploy_agent:DeployAgent",
    "install_agent": f"{_STEPS}.install_agent:InstallAgent",
    "add_skills": f"{_STEPS}.add_skills:AddSkills",
    "prompt_agent": f"{_STEPS}.prompt_agent:PromptAgent",
    "agent_prompt_response_verifier": (
        f"{_STEPS}.agent_prompt_response_verifier:AgentPromptResponseVerifier"
    ),
    "rubrics_verifier": f"{_STEPS}.rubrics_verifier:RubricsVerifier",
    "run_container_unit_tests_verifier": (
        f"{_STEPS}.run_container_unit_tests_verifier:RunContainerUnitTestsVerifier"
    ),
    "tool_call_verifier": f"{_STEPS}.tool_call_verifier:ToolCallVerifier",
}

#: Env type -> `module:Class`.
ENV_TYPES = {
    "mcp_server": "agentenv_core_steps.envs.mcp_server:McpServerEnv",
    "computer_driver": "agentenv_core_steps.envs.computer_driver:ComputerDriverEnv",
}

#: Agent kind -> `module:Class`.
AGENT_KINDS = {
    "scripted": "agentenv_core_steps.agents.scripted:ScriptedAgent",
    "oracle": "agentenv_core_steps.agents.scripted:OracleAgent",
    "tool-loop": "agentenv_core_steps.agents.tool_loop:ToolLoopAgentKind",
    "a2a_agent": "agentenv_core_steps.agents.a2a:A2AAgentKind",
}
