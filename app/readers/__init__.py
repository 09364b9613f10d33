"""Sources and readers: the Arrow readers models use and the imputed tabular view."""
