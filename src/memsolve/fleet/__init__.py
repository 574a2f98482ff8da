"""Fleets: one policy over many agents' record sets, on Dask (:mod:`memsolve.fleet.batch`)."""
