"""What the app and the commands offer beside the model: the message catalogues of each language, lessons, the tiny
model trained in the page, and the one-file browser explorer."""
