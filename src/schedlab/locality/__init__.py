"""DynDL: data-locality-aware scheduling with dynamic data-transfer costs (Jin et al., Appl. Sci. 2018)."""
