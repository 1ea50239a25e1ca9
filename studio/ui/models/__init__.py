"""Qt item models of the studio: resources, threads, messages, generations, diff rows, log, chunks."""

from studio.ui.models.chunks import BufferedChunkModel
from studio.ui.models.diff import DiffModel
from studio.ui.models.generations import GenerationTableModel
from studio.ui.models.messages import MessageTableModel
from studio.ui.models.observations import ObservationLogModel
from studio.ui.models.resources import ResourceListModel
from studio.ui.models.threads import ThreadTableModel

__all__ = ["BufferedChunkModel", "DiffModel", "GenerationTableModel", "MessageTableModel",
           "ObservationLogModel", "ResourceListModel", "ThreadTableModel"]
