"""myapp: a small project that uses durable-tools, to copy and change.

`myapp.tools` holds the registry a worker serves (`durable-tools worker --tools myapp.tools`,
run from the folder that holds `myapp/`): Python tools, an MCP server's tools and an
OpenAPI document's operations. See examples/README.md.
"""
