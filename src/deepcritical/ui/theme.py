"""The web app's look: a Gradio theme with readable contrast in light and dark mode, and the
CSS of the app's own elements with their dark variants.

Gradio follows the system's colour scheme (``prefers-color-scheme``) and marks dark mode with
the ``.dark`` class; every colour the app's CSS sets has a ``.dark`` variant here. Button
colours give white text a contrast of at least 4.5:1 (WCAG AA), and focused controls get a
visible outline (keyboard use).
"""

from __future__ import annotations

import gradio as gr

__all__ = ["THEME", "THEME_CSS", "make_theme"]


def make_theme() -> gr.themes.Base:
    """Gradio's default theme in blue, primary and stop buttons dark enough for white text
    (blue-700 / red-700 light, blue-600 / red-700 dark)."""
    return gr.themes.Default(primary_hue="blue", secondary_hue="slate").set(
        button_primary_background_fill="*primary_700",
        button_primary_background_fill_hover="*primary_800",
        button_primary_background_fill_dark="*primary_600",
        button_primary_background_fill_hover_dark="*primary_700",
        button_primary_text_color="white",
        button_primary_text_color_dark="white",
        button_cancel_background_fill="#b91c1c",
        button_cancel_background_fill_hover="#991b1b",
        button_cancel_background_fill_dark="#b91c1c",
        button_cancel_background_fill_hover_dark="#991b1b",
        button_cancel_text_color="white",
        button_cancel_text_color_dark="white",
    )


THEME = make_theme()

THEME_CSS = """
button:focus-visible, [role="tab"]:focus-visible, input:focus-visible, textarea:focus-visible {
  outline: 3px solid #1d4ed8; outline-offset: 2px; }
.dark button:focus-visible, .dark [role="tab"]:focus-visible, .dark input:focus-visible,
.dark textarea:focus-visible { outline-color: #93c5fd; }
.dc-stopped { border-left: 4px solid #1d4ed8; background: #eff6ff; color: #1e3a8a;
  padding: 6px 10px; border-radius: 4px; }
.dark .dc-stopped { background: #1e293b; color: #dbeafe; border-left-color: #60a5fa; }
.dc-sources-note { font-size: 0.9em; }
.dark .dc-evidence td, .dark .dc-evidence th { border-color: #4b5563; }
.dark .dc-card { border-color: #4b5563; }
.dark .dc-verdict-yes { color: #34d399; } .dark .dc-verdict-no { color: #f87171; }
.dark .dc-verdict-uncertain { color: #fbbf24; } .dark .dc-verdict-none { color: #d1d5db; }
.dark .dc-flow-box { border-color: #9ca3af; } .dark .dc-flow-arrow { color: #9ca3af; }
.dark .dc-bar { background: #374151 !important; }
.dark .dc-bar > div { background: #60a5fa !important; }
.dc-flag { display: inline-block; padding: 1px 6px; border-radius: 4px; font-size: 0.8em;
  font-weight: 600; white-space: nowrap; }
.dc-flag-retracted { background: #b91c1c; color: white; }
.dc-badge { display: inline-block; padding: 1px 7px; border-radius: 10px; font-size: 0.8em;
  background: #1d4ed8; color: white; margin-left: 4px; }
.dc-flag-other { background: #fef3c7; color: #78350f; border: 1px solid #d97706; }
.dark .dc-flag-other { background: #451a03; color: #fde68a; }
.dc-retracted td { text-decoration: line-through; text-decoration-color: #b91c1c; }
.dc-retracted td.dc-flags, .dc-retracted td.dc-cited { text-decoration: none; }
"""
"""CSS of the app's own elements added by this module (stopped note, sources note, focus
outline, integrity-flag badges: red RETRACTED with white text, amber for other flags) and the
dark variants of the colours set elsewhere (evidence table, answer card, flow diagram,
progress bar: its inline colours need ``!important``)."""
