"""Twenty realistic `search_tools` queries over GitHub's REST document, each with the
operation(s) a good search must return.

Written before the ranking was run on the document (see the commit that added this file
alone): the queries are what a model asks, not tuned to what the ranking finds. Expected
names are `operation_tool_name` of GitHub's operationIds.
"""

from __future__ import annotations

__all__ = ["GITHUB_QUERIES"]

GITHUB_QUERIES: list[tuple[str, set[str]]] = [
    ("list open pull requests of a repo", {"pulls_list"}),
    ("create an issue comment", {"issues_create_comment"}),
    ("delete a branch protection rule", {"repos_delete_branch_protection"}),
    ("merge a pull request", {"pulls_merge"}),
    ("create a new repository for the authenticated user", {"repos_create_for_authenticated_user"}),
    ("get the contents of a file in a repository", {"repos_get_content"}),
    (
        "list the runs of a GitHub Actions workflow",
        {"actions_list_workflow_runs", "actions_list_workflow_runs_for_repo"},
    ),
    ("create a release", {"repos_create_release"}),
    ("add labels to an issue", {"issues_add_labels"}),
    ("star a repository", {"activity_star_repo_for_authenticated_user"}),
    ("list the members of an organization", {"orgs_list_members"}),
    ("create a gist", {"gists_create"}),
    ("search code across repositories", {"search_code"}),
    ("request reviewers for a pull request", {"pulls_request_reviewers"}),
    ("get a user by their username", {"users_get_by_username"}),
    ("create a webhook for a repository", {"repos_create_webhook"}),
    ("list commits of a repository", {"repos_list_commits"}),
    ("add a collaborator to a repository", {"repos_add_collaborator"}),
    ("fork a repository", {"repos_create_fork"}),
    ("close an issue", {"issues_update"}),
]
