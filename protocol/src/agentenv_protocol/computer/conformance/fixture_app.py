"""The probe's fixture app (runs on the computer under test, with python3 and tkinter): it
shows what the probe clicks, types, drags and scrolls, writes its layout in screen pixels to
layout.json and what it saw to state.json (both under ~/.agentenv-probe)."""

import json
import os
import tkinter as tk
from typing import Any

HOME = os.path.join(os.path.expanduser("~"), ".agentenv-probe")
CELL, COLS = 20, 8
state: dict[str, Any] = {
    "cells": {},
    "right_clicks": 0,
    "double_clicks": 0,
    "drags": [],
    "scroll_top": 0,
    "name": "",
    "notes": "",
    "keys": [],
    "loaded": None,
}
stroke: dict[str, Any] = {}


def save():
    state["name"] = name.get()
    state["notes"] = notes.get("1.0", "end-1c")
    inbox = os.path.join(HOME, "inbox.txt")
    if os.path.exists(inbox):
        with open(inbox, encoding="utf-8") as handle:
            state["loaded"] = handle.read()
    temp = os.path.join(HOME, "state.json.part")
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(temp, os.path.join(HOME, "state.json"))


def on_cell(event, clicks=1):
    key = f"{event.x // CELL},{event.y // CELL}"
    state["cells"][key] = state["cells"].get(key, 0) + 1
    if clicks == 2:
        state["double_clicks"] += 1
    save()


def on_right(event):
    state["right_clicks"] += 1
    save()


def on_press(event):
    stroke.update(start=[event.x, event.y], points=1)


def on_motion(event):
    stroke["points"] = stroke.get("points", 0) + 1


def on_release(event):
    if "start" in stroke:
        state["drags"].append(
            {"start": stroke["start"], "end": [event.x, event.y], "points": stroke.get("points", 1)}
        )
        stroke.clear()
        save()


def on_wheel(event):
    state["scroll_top"] += (
        1 if getattr(event, "num", 5) == 5 or getattr(event, "delta", -1) < 0 else -1
    )
    save()


def on_key(event):
    if event.state & 0x4 and event.keysym not in ("Control_L", "Control_R"):
        state["keys"].append(f"Control+{event.keysym.lower()}")
    save()


root = tk.Tk()
root.title("agentenv probe fixture")
root.geometry("+0+0")
grid = tk.Canvas(root, width=CELL * COLS, height=CELL * COLS, bg="#ffffff", highlightthickness=0)
grid.grid(row=0, column=0)
for i in range(COLS + 1):
    grid.create_line(i * CELL, 0, i * CELL, CELL * COLS, fill="#dddddd")
    grid.create_line(0, i * CELL, CELL * COLS, i * CELL, fill="#dddddd")
grid.bind("<Button-1>", on_cell)
grid.bind("<Double-Button-1>", lambda e: on_cell(e, 2))
grid.bind("<Button-3>", on_right)
pad = tk.Canvas(root, width=200, height=120, bg="#f0f0ff", highlightthickness=0)
pad.grid(row=0, column=1)
pad.bind("<ButtonPress-1>", on_press)
pad.bind("<B1-Motion>", on_motion)
pad.bind("<ButtonRelease-1>", on_release)
pad.bind("<Button-4>", on_wheel)
pad.bind("<Button-5>", on_wheel)
pad.bind("<MouseWheel>", on_wheel)
name = tk.Entry(root, width=30)
name.grid(row=1, column=0, columnspan=2, sticky="we")
notes = tk.Text(root, width=40, height=4)
notes.grid(row=2, column=0, columnspan=2, sticky="we")
marker = tk.Frame(root, width=12, height=12, bg="#ff0000")
marker.grid(row=3, column=0, sticky="w")
for widget in (name, notes):
    widget.bind("<KeyRelease>", on_key)
    widget.bind("<KeyPress>", on_key)


def box(widget):
    return [widget.winfo_rootx(), widget.winfo_rooty(), widget.winfo_width(), widget.winfo_height()]


def write_layout():
    root.update_idletasks()
    layout = {
        "grid": box(grid),
        "cell": CELL,
        "pad": box(pad),
        "name": box(name),
        "notes": box(notes),
        "markers": [[marker.winfo_rootx() + 6, marker.winfo_rooty() + 6, "#ff0000"]],
    }
    save()
    with open(os.path.join(HOME, "layout.json"), "w", encoding="utf-8") as handle:
        json.dump(layout, handle)


os.makedirs(HOME, exist_ok=True)
root.after(300, write_layout)
root.mainloop()
