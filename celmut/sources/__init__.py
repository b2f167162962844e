"""Where policies and resources come from: files and directories now, cluster objects later."""
