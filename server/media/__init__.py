"""The one time base: the broadcast's 48 kHz sample clock, the speech placed on it, and the
broadcast that reads it out frame by frame, on time, to every viewer's track."""
