// cairn::compiled: the bodies of cairn/mcp/ (its *-inl.hpp files), compiled once (docs/api.md, "Compiled mode").
#include "cairn/mcp/artifact_tools-inl.hpp"
#include "cairn/mcp/server-inl.hpp"
