"""What pirex knows, standing on nothing above it: experiments and their parameters, bundles, the machine record,
capabilities, preflight, processes, paths, errors (docs/design.md, "Layers")."""
