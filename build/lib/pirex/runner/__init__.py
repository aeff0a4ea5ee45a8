"""Running an experiment: variants (native, docker and Docker taken apart), the interleaved
plan, and the orchestration that writes one result bundle."""
