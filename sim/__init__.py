"""tensorlsu.sim: PTX front end, fragment layouts, numpy reference model and trace replay."""
