"""Test markers, set from what a test uses so that test files rarely need to say it.

A test is marked `docker` when its fixtures include a Docker one (`DOCKER_FIXTURES`) or it is
the `docker` case of a parametrized test; an explicit `@pytest.mark.docker` covers a test that
asks for the daemon in its body. `slow` comes from the fixtures (`SLOW_FIXTURES`), from the
name of a multi-process contract test, and from `SLOW`, the measured list. `browser` and
`network` are set by the modules. CONTRIBUTING.md lists the markers and the inner loop that
leaves them out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: A test whose fixture closure holds one of these uses a Docker daemon (podman's stands in).
DOCKER_FIXTURES = frozenset({"docker_client", "docker_runner", "base_image", "podman"})
#: Fixtures that start something that takes seconds (a Ray head, the Firestore emulator).
SLOW_FIXTURES = frozenset({"ray_head", "firestore_endpoint"})
#: Contract tests that race writers in several processes (`..._in_processes_...`,
#: `..._from_processes_...`): a second or more per backend.
SLOW_NAME_PARTS = ("_in_processes", "_from_processes")
ALL = frozenset({"*"})
#: Tests that took 5 s or more in either of two inner-loop runs on a loaded 2-core machine
#: (load average 12-14), by module: function names (`Class::name` in a class), or ALL when
#: most of the module is slow. Refresh from `bash scripts/test --inner --durations=50`.
SLOW: dict[str, frozenset[str]] = {
    "tests/test_flat_process.py": ALL,
    "plugins/openenv/tests/test_port_race.py": frozenset(
        {"test_32_concurrent_resets_all_succeed_twice"}
    ),
    "tests/test_scripted_model_conversations.py": frozenset(
        {"test_twenty_trials_at_concurrency_8_of_a_tool_loop_task_all_pass"}
    ),
    "protocol/tests/test_slow_clients.py": frozenset(
        {
            "test_an_a2a_agent_served_by_serve_cuts_trickled_headers_off",
            "test_the_default_deadline_holds_for_the_run_gateway",
        }
    ),
    "plugins/hf-hub/tests/test_dataset_push.py": frozenset(
        {"test_push_chat_jsonl_then_parquet_and_read_them_back"}
    ),
    "tests/test_executor_logs.py": frozenset(
        {"test_an_executors_log_is_kept_and_its_failure_says_why"}
    ),
    "plugins/core-steps/tests/test_triggers.py": frozenset(
        {"test_local_nine_oclock_fires_once_each_side_of_dst_in_order"}
    ),
    "kernel/tests/cli/test_runs_records_compat.py": frozenset(
        {"test_old_records_show_list_and_export_unchanged"}
    ),
    "kernel/tests/sandboxes/test_manager.py": frozenset(
        {"test_sigkilled_owner_sandbox_is_reaped_by_the_next_manager"}
    ),
    "kernel/tests/stores/test_contract_suites.py": frozenset(
        {"test_suite_catches_a_broken_backend"}
    ),
    "kernel/tests/stores/test_sqlite_tallies.py": frozenset(
        {"test_concurrent_writers_keep_the_counts_exact"}
    ),
    "plugins/aws-stores/tests/test_contracts.py": frozenset(
        {
            "TestDynamoDocuments::test_bad_keys_rejected",
            "TestDynamoDocuments::test_concurrent_create_in_threads_one_wins",
            "TestDynamoVersionedEntities::test_concurrent_writers_in_tasks",
            "TestDynamoVersionedEntities::test_concurrent_writers_in_threads",
            "TestS3Objects::test_put_get_exists_delete",
        }
    ),
    "plugins/aws-stores/tests/test_run_hello.py": frozenset(
        {"test_run_hello_twice_on_aws_backends"}
    ),
    "plugins/core-steps/tests/test_clock_agent_tz.py": ALL,
    "plugins/core-steps/tests/test_compat_cli.py": frozenset(
        {"test_env_validators_through_the_cli"}
    ),
    "plugins/core-steps/tests/test_env_mcp1.py": ALL,
    "plugins/core-steps/tests/test_triggers_resume.py": frozenset(
        {"test_a_killed_run_resumes_with_the_clock_and_fired_triggers"}
    ),
    "plugins/explorer/tests/test_api.py": frozenset(
        {
            "test_a_run_has_statistics_and_its_trials",
            "test_runs_list_newest_first_with_counts_and_paging",
        }
    ),
    "plugins/explorer/tests/test_keep_logs.py": ALL,
    "plugins/explorer/tests/test_up_stop.py": ALL,
    "plugins/gcp-stores/tests/test_contracts.py": frozenset(
        {"TestGcsObjects::test_put_get_exists_delete"}
    ),
    "plugins/hf-hub/tests/test_run_e2e.py": ALL,
    "plugins/openenv/tests/test_episodes.py": frozenset(
        {
            "test_16_concurrent_sessions_do_not_see_each_others_notes",
            "test_errors_come_back_as_observations",
            "test_oracle_calls_give_reward_1_and_a_wrong_answer_less",
        }
    ),
    "plugins/openenv/tests/test_serving.py": frozenset(
        {
            "test_end_turn_answers_the_next_prompt_of_a_two_turn_task",
            "test_serve_from_the_cli_and_ctrl_c_tears_the_open_episode_down",
            "test_the_openenv_agent_kind_outside_a_server_says_what_it_is",
        }
    ),
    "protocol/tests/test_forwarding.py": frozenset(
        {"test_concurrent_first_calls_share_one_handshake"}
    ),
    "protocol/tests/test_gateway.py": frozenset(
        {
            "test_a_dead_env_gives_a_quick_clear_error_and_the_rest_keeps_working",
            "test_a_fastmcp_server_answers_tools_list_and_call_through_the_gateway",
            "test_clash_fails_closed_naming_both_envs_unless_namespaced",
            "test_clock_and_get_time_across_new_york_dst",
            "test_every_route_needs_a_valid_token",
            "test_gateway_runs_as_its_own_process",
            "test_union_of_tools_and_routed_calls",
        }
    ),
    "protocol/tests/test_gateway_only.py": ALL,
    "protocol/tests/test_import_isolation.py": frozenset(
        {"test_server_names_still_resolve_lazily"}
    ),
    "protocol/tests/test_mcp_fast_path.py": frozenset(
        {"test_fast_path_answers_like_the_mcp_transport"}
    ),
    "protocol/tests/test_readme_samples.py": ALL,
    "protocol/tests/test_robustness.py": frozenset(
        {
            "test_a_hanging_tool_times_out_at_the_gateway_which_keeps_serving",
            "test_deeply_nested_json_is_a_parse_error_everywhere",
            "test_ids_json_rpc_forbids_are_refused_and_never_echoed",
            "test_oversize_bodies_get_413_with_a_json_rpc_error",
        }
    ),
    "protocol/tests/test_scopes.py": frozenset(
        {
            "test_a_scoped_token_reaches_only_the_envs_it_names",
            "test_unscoped_and_admin_tokens_reach_every_env",
        }
    ),
    "tests/test_agents_behaviour.py": frozenset(
        {
            "test_429_and_503_are_retried",
            "test_a2a_agent_gets_env_vars_model_system_prompt_and_gateway",
            "test_dead_model_endpoint_is_infrastructure_not_a_hang",
            "test_envs_deployed_after_the_agent_reach_it_at_the_next_prompt",
            "test_malformed_model_response_is_an_agent_failure",
            "test_model_that_never_stops_calling_tools_hits_max_turns",
            "test_multi_turn_prompts_keep_the_conversation",
            "test_prompt_timeout_is_recorded",
            "test_rubrics_judge_keeps_its_justification",
            "test_scripted_agent_folder_with_parts_prompt_and_agent_scoped_call_checks",
            "test_secrets_are_redacted_from_answers_and_stored_trajectories",
            "test_unreachable_agent_is_an_agent_failure_quickly",
        }
    ),
    "tests/test_agents_e2e.py": ALL,
    "tests/test_agents_resume.py": ALL,
    "tests/test_agents_validation.py": frozenset(
        {"test_bad_agent_steps_are_refused_before_running"}
    ),
    "tests/test_bundle_mutations.py": ALL,
    "tests/test_bundle_no_pycache.py": frozenset({"test_a_run_writes_no_pycache_into_the_bundle"}),
    "tests/test_cli_agents_check.py": frozenset(
        {
            "test_install_agent_into_a_docker_sandbox_is_refused_with_the_way_out",
            "test_openhands_resolves_and_says_what_it_is_missing",
        }
    ),
    "tests/test_compat_fields_run.py": ALL,
    "tests/test_concurrent_runs.py": ALL,
    "tests/test_docs_commands.py": frozenset({"test_documented_command_runs"}),
    "tests/test_env_deploy.py": ALL,
    "tests/test_envs_local.py": frozenset(
        {
            "test_a_sigkilled_run_resumes_through_a_new_gateway",
            "test_an_env_that_exits_fails_fast_with_its_log",
            "test_an_env_torn_down_mid_task_leaves_the_gateway",
            "test_example_passes_as_local_processes_and_leaves_nothing",
            "test_requirements_the_interpreter_lacks_get_a_cached_venv",
            "test_steps_on_an_env_that_is_not_deployed_name_the_deployed_ones",
            "test_tokens_are_never_persisted_and_the_gateway_stops_with_the_run",
            "test_verifier_rows_of_the_wrong_shape_fail_the_step_clearly",
        }
    ),
    "tests/test_failure_classes.py": ALL,
    "tests/test_imports_acyclic.py": frozenset({"test_no_cycles_between_files_at_import_time"}),
    "tests/test_init_check_cache.py": frozenset(
        {
            "test_a_scaffolded_bundle_checks_and_passes_a_real_run",
            "test_check_an_hf_bundle_and_list_the_download",
            "test_env_check_names_a_bad_card_schema_and_data_plane",
            "test_env_check_names_a_data_plane_handler_that_raises",
            "test_env_check_names_a_data_plane_that_loses_what_it_is_given",
            "test_env_check_of_an_env_already_serving_at_a_url",
        }
    ),
    "tests/test_output_people_read.py": frozenset(
        {
            "test_piped_output_is_plain_and_colour_follows_force_and_no_color",
            "test_the_trials_table_fits_100_columns_and_pass_at_k_is_on_demand",
        }
    ),
    "tests/test_reference_bundles.py": ALL,
    "tests/test_registry_cli.py": frozenset(
        {
            "test_artifact_type_groups_put_and_get_by_id",
            "test_dockerfile_puts_of_envs_and_agents_by_id",
            "test_eval_create_and_add_tasks_from_task_references",
            "test_put_list_show_run_export_and_one_lineage",
            "test_task_run_output_dir_start_step_and_get_instance",
        }
    ),
    "tests/test_resume_fencing.py": ALL,
    "tests/test_run_compat.py": frozenset(
        {"test_with_evals_and_no_selection_only_the_evals_tasks_run"}
    ),
    "tests/test_run_resume.py": frozenset(
        {"test_sigkill_then_any_command_reaps_what_the_dead_run_left"}
    ),
    "tests/test_run_trials_resume.py": frozenset(
        {"test_sigkill_halfway_through_200_trials_then_resume"}
    ),
    "tests/test_secrets_leak.py": frozenset(
        {
            "test_a_resume_that_adopts_the_env_goes_on_writing_its_log_redacted",
            "test_an_env_printing_a_secret_never_writes_it_to_disk_even_while_running",
        }
    ),
    "tests/test_trial_logs.py": frozenset(
        {
            "test_a_server_that_exits_keeps_its_last_words",
            "test_env_output_is_kept_and_shown_by_runs_show",
        }
    ),
    "tests/test_watchdog.py": frozenset({"test_the_watchdog_can_be_switched_off"}),
}

#: Tests that used 1.5 CPU-seconds or more (the test process plus the processes it waited for)
#: in a 4-worker inner loop (`-n 4`) at load average 9-21: on a shared 2-core machine CPU, not
#: wall time, is what the inner loop runs out of. A module-scoped fixture is charged to the first
#: test of its module, so such a test is listed only when the time is its own. Same format as
#: `SLOW`; refresh with a per-test `os.times()` wrapper around `pytest_runtest_protocol`.
SLOW_BY_CPU: dict[str, frozenset[str]] = {
    "plugins/hf-hub/tests/test_dataset_push.py": frozenset(
        {
            "test_a_commit_cannot_be_pushed_to_and_nothing_is_sent",
        }
    ),
    "plugins/hf-hub/tests/test_push_e2e.py": frozenset(
        {
            "test_push_then_run_from_the_hub_and_push_again",
        }
    ),
    "plugins/openenv/tests/test_build_app_sandbox.py": frozenset(
        {
            "test_sandbox_replaces_the_provider_of_every_step_that_chooses_one",
        }
    ),
    "plugins/openenv/tests/test_crash.py": frozenset(
        {
            "test_a_trajectory_lost_to_a_power_loss_is_reported_by_runs_show_and_export",
        }
    ),
    "plugins/openenv/tests/test_pool_race.py": frozenset(
        {
            "test_16_concurrent_resets_on_a_warm_pool_all_succeed",
        }
    ),
    "plugins/openenv/tests/test_port_race.py": frozenset(
        {
            "test_a_taken_port_is_retried_on_another",
        }
    ),
    "plugins/openenv/tests/test_serving.py": frozenset(
        {
            "test_task_api_lists_the_served_tasks",
        }
    ),
    "plugins/reporting/tests/test_runs_compare.py": frozenset(
        {
            "test_compare_two_recorded_runs",
        }
    ),
    "plugins/scaffold/tests/test_plugin_new.py": frozenset(
        {
            "test_plugin_new_creates_a_package_whose_tests_pass",
        }
    ),
    "protocol/tests/test_gateway.py": frozenset(
        {
            "test_the_wire_env_and_gateway_are_stateless_json",
        }
    ),
    "protocol/tests/test_gateway_hot_path.py": frozenset(
        {
            "test_a_body_that_trickles_is_cut_off_on_the_hot_path",
        }
    ),
    "protocol/tests/test_gateway_scale.py": frozenset(
        {
            "test_4096_calls_in_flight_are_each_answered_and_logged_once",
            "test_a_cancelled_call_gives_its_connection_back",
        }
    ),
    "protocol/tests/test_proxy_agent.py": frozenset(
        {
            "test_serve_runs_the_proxy_as_its_own_process",
        }
    ),
    "tests/test_a2a_sdk_agent_run.py": frozenset(
        {
            "test_an_sdk_agent_in_a_bundle_passes_the_notes_task",
            "test_an_sdk_agents_own_failure_and_usage_reach_the_record",
        }
    ),
    "tests/test_agent_deploy.py": frozenset(
        {
            "test_a2a_agent_deploy_serves_the_stored_agent_until_ctrl_c",
            "test_bad_input_changes_nothing",
        }
    ),
    "tests/test_agents_validation.py": frozenset(
        {
            "test_a_misspelled_agent_toml_key_is_refused_by_check_and_dry_run",
        }
    ),
    "tests/test_check_tool_names.py": frozenset(
        {
            "test_a_misspelled_tool_of_a_declared_env_is_warned_with_a_did_you_mean",
        }
    ),
    "tests/test_costs.py": frozenset(
        {
            "test_a_resume_with_a_larger_budget_runs_the_trials_the_budget_held_back",
        }
    ),
    "tests/test_envs_local.py": frozenset(
        {
            "test_two_envs_with_the_same_tool_fail_closed_naming_both",
        }
    ),
    "tests/test_fork.py": frozenset(
        {
            "test_the_cli_forks_and_checks_its_flags",
        }
    ),
    "tests/test_imports_acyclic.py": frozenset(
        {
            "test_no_lazy_import_closes_a_cycle",
        }
    ),
    "tests/test_init_check_cache.py": frozenset(
        {
            "test_cache_list_and_prune_by_kind_and_age",
            "test_check_lists_every_problem_with_file_step_field",
        }
    ),
    "tests/test_non_finite_numbers.py": frozenset(
        {
            "test_a_finite_weight_still_runs",
        }
    ),
    "tests/test_pool_run.py": frozenset(
        {
            "test_a_bundle_that_says_redeploy_deploys_every_trial",
            "test_trials_reuse_one_warm_instance_each_with_its_own_record",
        }
    ),
    "tests/test_registry_cli.py": frozenset(
        {
            "test_an_eval_runs_by_id_and_exports_with_its_tasks",
            "test_bad_input_is_named_and_changes_nothing",
        }
    ),
    "tests/test_run_compat.py": frozenset(
        {
            "test_package_slash_name_runs_an_installed_bundle",
        }
    ),
    "tests/test_run_resume_effects.py": frozenset(
        {
            "test_a_step_that_is_not_rerunnable_is_never_run_twice",
            "test_a_trial_whose_sandbox_is_gone_restarts_and_says_so",
        }
    ),
    "tests/test_secrets_leak.py": frozenset(
        {
            "test_a_short_secret_reaches_no_file_and_no_output",
        }
    ),
    "tests/test_seeding.py": frozenset(
        {
            "test_a_verifier_reads_the_env_but_cannot_reset_or_add",
            "test_the_bank_is_seeded_before_the_agents_turn_and_verified",
        }
    ),
    "tests/test_startup_imports.py": frozenset(
        {
            "test_run_hello_starts_one_bwrap_per_command_and_reads_its_indexes_once",
        }
    ),
    "tests/test_typing.py": frozenset(
        {
            "test_a_third_party_plugin_type_checks_against_the_installed_kernel",
        }
    ),
}


def _parametrized_on_docker(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "docker" in callspec.params.values()


def _measured_slow(item: pytest.Item, root: Path) -> bool:
    try:
        module = item.path.relative_to(root).as_posix()
    except ValueError:
        return False
    name = getattr(item, "originalname", item.name)
    cls = getattr(item, "cls", None)
    for table in (SLOW, SLOW_BY_CPU):
        listed = table.get(module)
        if listed and (
            listed is ALL
            or name in listed
            or (cls is not None and f"{cls.__name__}::{name}" in listed)
        ):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(config.rootpath)
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & DOCKER_FIXTURES or _parametrized_on_docker(item):
            item.add_marker(pytest.mark.docker)
        slow_name = any(part in item.name for part in SLOW_NAME_PARTS)
        if names & SLOW_FIXTURES or slow_name or _measured_slow(item, root):
            item.add_marker(pytest.mark.slow)
