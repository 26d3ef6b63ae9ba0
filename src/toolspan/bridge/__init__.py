"""Turn spans from any source back into the timelines and trees agent frontends draw."""
