"""The run side of the env clock and triggers: `control` calls the run gateway's clock and
trigger routes, `resume` keeps the clock and the triggers' progress across a crashed run."""
