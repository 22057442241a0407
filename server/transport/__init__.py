"""How the show reaches the pages: WebRTC peers that carry the broadcast's audio (with the
exact RTP ↔ sample mapping), and the socket.io signals that carry events, chat and reports,
each bounded against what an anonymous viewer may send."""
