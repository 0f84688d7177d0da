// cairn — deprecated: renamed cairn/workflow/artifact_recorder.hpp (docs/api.md). This header only includes that one
// and will be removed in the next release. It does not warn by itself (a #pragma message would stop -Werror builds at
// the include); the deprecated names it used to declare (artefact_recorder, ArtefactObserver) warn where they are used.
#pragma once

#include "cairn/workflow/artifact_recorder.hpp"
