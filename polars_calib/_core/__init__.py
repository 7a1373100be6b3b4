"""The core: options, problems and their one refused rule, the bin rule and its
encodings, counter-based draws, special functions, validation. Imports nothing else
of the package."""
