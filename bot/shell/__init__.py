"""`gpu-bot shell`: the real Bolt app and listeners driven from a console, in the spirit
of Hubot's shell adapter and Errbot's text backend. Slash commands go in as the bodies
Slack sends; messages, App Home and modals come out as text; buttons are pressed by
number and forms filled in by answering questions."""
