"""Built-in workspace tools, opt-in: files and commands confined to one directory.

`register_workspace_tools(registry, root)` adds `read_file`, `write_file`, `edit_file`,
`list_files`, `search_files` and `run_command`; `Workspace` is the path confinement they
share, usable on its own by tools of your own: `Workspace.locate` gives a `Located`
(an open directory and a name) to open files without a check-then-use race.
"""

from ._paths import Workspace, WorkspacePathError
from ._resolve import Located
from ._tools import register_workspace_tools

__all__ = ["Located", "Workspace", "WorkspacePathError", "register_workspace_tools"]
