"""The bus as every side reaches it: topic names, their creation, and a producer with the
pipeline's durability settings. The stream processors (``streams``), the write side and the
read side (the query service's run-event relay and lag probe) all use it, so the read side
needs nothing of the stream layer."""
