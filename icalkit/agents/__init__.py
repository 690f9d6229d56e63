"""Everything that acts: action API, sandboxed executor, feedback, prompts, parsing, planners."""
