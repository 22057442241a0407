"""The show: what is said becomes speech on the broadcast clock, in one direction.

    utterance (text, its character, its mode; queued by the stage)
      → phrasing   tokens (the words verbatim, or the LLM's reply) cut into phrases
      → speaking   each phrase synthesized on the TTS's thread, an utterance's opening first
      → placing    resampled, laid on the timeline at the write head, visemes and onsets
      → announcing phrase and viseme events to the pages, ahead of playout
    and, watching the broadcast as it plays (playout), the utterance's first audio and its end.

Each step hands the next a value (str phrases, Spoken, PlacedSpeech); the pipeline joins them
and the stage runs utterances through it one after another. What flows back is explicit: the
TTS buffer's level steers the phrase window, and the ASR's viseme correction is an input of
placing.
"""
