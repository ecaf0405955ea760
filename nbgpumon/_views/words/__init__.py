"""Sentences about cells, regions and processes, from facts: a cell's summary line, the cells
table, what a cell started, traced allocations, advice and a fit."""
