"""Ask (SPEC B1, B8): one structured, cited answer, streamed as events.

``asker`` runs an ask from question to result; ``turn`` is the ask on its way through the stages
(``AskTurn``); ``stages`` holds ask's own stages around the shared pipeline (the persona's extra
model calls); ``drafting`` writes and weighs the answer with the model; ``events`` is what an ask
streams and gives back (``AskResult``).
"""
