"""Never ends on its own, and spends most of its time in weakref callbacks, where the
interpreter swallows exceptions ("Exception ignored in ..."): a timeout's stop that lands
there must still stop the program."""
import time
import weakref

import torch


class Box:
    pass


def slow_callback(_ref):
    time.sleep(0.2)


x = torch.zeros(3)
while True:
    box = Box()
    ref = weakref.ref(box, slow_callback)
    del box  # the callback runs here
    x = x + 1
