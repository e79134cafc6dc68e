from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import polars_ppdm as ppdm

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# The tiers (Makefile, .ci/run): these folders and files belong to a tier as a whole, so
# they are marked here, and a new test in one of them lands in its tier with no decorator.
# `make test` runs what none of the tier markers select; .ci/tiers_check.py proves that
# every collected test runs in some leg of CI.
_TESTS = Path(__file__).resolve().parent
TIER_OF_PATH = {
    "spark": "spark",  # a local Spark session (JVM)
    "fuzz": "fuzz",  # Hypothesis; CI's fuzz leg runs it again under the slow profile
    "test_report_browser.py": "browser",  # headless Chromium
    "test_notebooks.py": "notebook",  # a Jupyter kernel per notebook
    "test_pipeline_kill.py": "kill",  # SIGKILL of 4-million-row runs
}

# Single tests (a node id under tests/, or its start: every parameter) that take seconds
# each on 2 cores, measured with --durations: out of `make test`, into their tier. The
# statistical ones are slow by design (hundreds of secrets, tolerances from the variance);
# the rest run whole pipelines, processes or timeouts. .ci/tiers_check.py fails on an
# entry that matches no test (a renamed test would silently come back to `make test`).
_SLOW = "slow"
TIER_OF_TEST = {
    "test_dp_audit.py::": _SLOW,  # the privacy-loss audits: thousands of releases each
    "test_dp.py::test_dplloyd_release_is_dp_over_many_secrets": _SLOW,
    "test_dp.py::test_quadtree_root_count_is_dp_over_many_secrets": _SLOW,
    "test_dp.py::test_discrete_laplace_is_epsilon_dp_for_a_shift_of_the_sensitivity": _SLOW,
    "test_dp.py::test_the_grid_of_eug_stays_within_its_cap_for_a_huge_n": _SLOW,
    "test_dp.py::test_a_tree_whose_frontier_explodes_is_refused_before_it_is_drawn": _SLOW,
    "test_dp_group_by.py::test_each_aggregate_is_unbiased_over_500_secrets": _SLOW,
    "test_dp_group_by.py::test_partition_selection_never_releases_a_group_of_one_person": _SLOW,
    # With every other user of the same module fixture of releases over many secrets (the
    # fixture would otherwise run in `make test` for the one left there).
    "test_dp_group_by.py::test_95_percent_intervals_cover_the_truth_93_to_97_percent": _SLOW,
    "test_dp_group_by.py::test_the_noise_has_the_declared_scale": _SLOW,
    "test_consistent_totals.py::test_unbiased_and_more_accurate_totals_over_300_secrets": _SLOW,
    "test_consistent_totals.py::test_the_new_sd_is_the_spread_and_the_intervals_cover": _SLOW,
    "test_dp_quantile_variance.py::test_variance_and_std_are_close_to_the_truth": _SLOW,
    "test_dp_quantile_variance.py::test_count_units_is_unbiased_with_its_declared_noise": _SLOW,
    "test_dp_quantile_variance.py::test_quantile_rank_error_stays_within_the_report": _SLOW,
    "test_consistent_totals.py::test_the_levels_agree_and_keep_their_rows": _SLOW,
    "test_baselines_004.py::test_nicv_far_better_at_epsilon_10_than_at_0_01": _SLOW,
    "test_rr_id3.py::test_agrawal_discretised_whole_record_p08": _SLOW,
    "test_rr_id3.py::test_mushroom_whole_record_p08_matches_plain_id3": _SLOW,
    "test_attack_suite.py::test_duckdb_macro_redraws_noise_over_changed_data": _SLOW,
    "test_duckdb.py::test_huge_bins_are_refused_before_any_memory_is_taken": _SLOW,
    "test_dp_group_by_sql_more.py::test_any_column_names": _SLOW,
    "test_sql_hostile.py::test_a_name_a_macro_uses_itself_is_any_column_or_table[dp_group_by-": _SLOW,
    # Whole pipelines run end to end (test_survey_outputs and the plan/run agreement stay
    # in `make test` as the smoke of the main job).
    "test_pipeline_run.py::test_changed_input_or_secret_is_a_new_run_that_spends": _SLOW,
    "test_pipeline_run.py::test_table_hashed_while_written_matches_the_file": _SLOW,
    "test_pipeline_run.py::test_identical_rerun_spends_nothing_and_writes_the_same_bytes": _SLOW,
    "test_pipeline_run.py::test_a_dp_group_by_release_spends_epsilon_and_delta": _SLOW,
    "test_pipeline_run.py::test_dp_noise_is_fresh_when_the_data_changed": _SLOW,
    "test_pipeline_run.py::test_the_secret_never_appears_in_files_or_output": _SLOW,
    "test_pipeline_run.py::test_summary_line_when_not_a_terminal_and_quiet": _SLOW,
    "test_pipeline_run.py::test_a_dp_group_by_run_short_of_delta_is_refused": _SLOW,
    "test_pipeline_run.py::test_progress_on_a_terminal": _SLOW,
    "test_pipeline_run.py::test_a_nightly_release_over_one_more_user_does_not_reveal": _SLOW,
    "test_pipeline_run.py::test_spiral_key_goes_to_a_0600_file_never_into_outputs": _SLOW,
    "test_pipeline_run.py::test_overspend_refused_before_the_input_is_opened": _SLOW,
    "test_pipeline_quantiles.py::test_a_run_releases_the_library_bits_and_charges_its_epsilon": _SLOW,
    "test_pipeline_honesty.py::test_whole_record_accepted_is_said_as_it_is": _SLOW,
    "test_pipeline_zcdp.py::test_as_of_may_not_go_back_over_new_data": _SLOW,
    "test_pipeline_zcdp.py::test_changed_rows_of_a_published_night_are_refused": _SLOW,
    "test_pipeline_zcdp.py::test_the_tree_is_charged_once_over_the_nights": _SLOW,
    "test_pipeline_zcdp.py::test_a_late_run_fills_the_nights_it_missed": _SLOW,
    "test_pipeline_zcdp.py::test_the_budget_change_a_refusal_suggests_works": _SLOW,
    "test_pipeline_zcdp.py::test_a_rho_budget_is_charged_in_rho_and_shown_as_epsilon_delta": _SLOW,
    "test_pipeline_zcdp.py::test_a_release_keeps_its_parameters_over_its_horizon": _SLOW,
    "test_pipeline_hostile.py::test_a_ledger_that_is_a_fifo_is_refused_without_hanging": _SLOW,
    # A stress test of processes creating one ledger at once (the deterministic guard of
    # the same fault, test_a_new_ledger_file_appears_whole, stays in `make test`).
    "test_ledger.py::test_processes_racing_to_create_one_ledger": _SLOW,
    "test_pipeline_hostile.py::test_a_pipeline_file_that_is_a_fifo_is_refused_without_hanging": _SLOW,
    "test_pipeline_hostile.py::test_ledger_into_a_closed_pipe_is_quiet": _SLOW,
    "test_pipeline_hostile.py::test_a_full_disk_at_the_commit_publishes_nothing": _SLOW,
    "test_pipeline_hostile.py::test_the_ledger_is_shown_and_planned_on_a_read_only_mount": _SLOW,
    "test_pipeline_hostile.py::test_a_budget_raised_in_the_file_fails_plan_until_the_ledger": _SLOW,
    "test_report_pipeline.py::test_an_identical_rerun_reports_that_it_spent_nothing": _SLOW,
    "test_report_pipeline.py::test_internal_report_refuses_changed_inputs_public_does_not": _SLOW,
    "test_report_pipeline.py::test_no_report_and_report_later": _SLOW,
    "test_report_pipeline.py::test_public_report_of_the_pipeline_holds_no_original_value": _SLOW,
    "test_report_pipeline.py::test_budget_before_and_after_the_run": _SLOW,
    "test_report_pipeline.py::test_a_pipeline_of_dp_releases_only": _SLOW,
    "test_report_pipeline.py::test_run_writes_both_versions_beside_the_manifest": _SLOW,
    "test_report_pipeline.py::test_a_table_folder_spark_wrote_is_replaced": "spark",
    "test_report_zcdp.py::test_year_ahead_when_the_runs_spend_nothing_or_the_horizon": _SLOW,
    "test_report_zcdp.py::test_a_zcdp_pipeline_reports_every_release_its_budget": _SLOW,
    "test_report_zcdp.py::test_a_pure_pipelines_budget_section_is_unchanged": _SLOW,
    "test_report_zcdp.py::test_a_dated_continual_release_says_the_dates": _SLOW,
    "test_report_zcdp.py::test_the_plan_says_the_year_ahead_in_one_line": _SLOW,
    "test_report.py::test_spiral_is_undone_by_the_known_io_attack": _SLOW,
    "test_report.py::test_the_page_is_deterministic": _SLOW,
    "test_report.py::test_public_page_never_reads_the_original": _SLOW,
    "test_report.py::test_public_page_holds_no_value_of_the_original": _SLOW,
    "test_report.py::test_the_verdict_counts_uniques_and_k_as_a_brute_force_count": _SLOW,
    "test_report.py::test_labels_are_text_never_math": _SLOW,
    "test_report.py::test_dp_group_by_is_titled_by_what_it_releases_and_plots": _SLOW,
    "test_ledger.py::test_processes_racing_for_a_budget_that_fits_one": _SLOW,
    "test_ledger.py::test_the_accountant_persists_across_sessions": _SLOW,
    "test_ledger.py::test_processes_killed_at_any_point_of_writing_leave_a_consistent": "kill",
    "test_ledger.py::test_reclaim_withdraws_only_runs_whose_process_died_before": "kill",
    "test_ledger.py::test_a_killed_run_keeps_its_reservation_and_a_killed_transaction": "kill",
}


def tier_of(nodeid: str) -> str | None:
    """The tier TIER_OF_PATH or TIER_OF_TEST gives a node id relative to tests/ (None: none)."""
    tier = TIER_OF_PATH.get(nodeid.split("/")[0].split("::")[0])
    return tier or next((t for start, t in TIER_OF_TEST.items() if nodeid.startswith(start)), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    registered = {line.split(":")[0].strip() for line in config.getini("markers")}
    for item in items:
        path = Path(item.path)
        if not path.is_relative_to(_TESTS):
            continue  # the package's doctests: the fast tier
        relative = path.relative_to(_TESTS).as_posix() + item.nodeid[len(item.nodeid.split("::")[0]) :]
        tier = tier_of(relative)
        # Only a registered marker: a run with an ini of its own (CI's wheel leg) has none.
        if tier is not None and tier in registered:
            item.add_marker(tier)


@pytest.fixture
def shared_data() -> Path:
    """The shared real data sets (../shared/data); tests skip when it is absent."""
    if not DATA.is_dir():
        pytest.skip(f"shared data folder {DATA} is absent")
    return DATA


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the polars_ppdm functions and macros registered."""
    return ppdm.duckdb.register(duckdb.connect())
